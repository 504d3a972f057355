// bench:soak's reading of another process's heaps (test/bench/inspector-heap.ts) against a real node process with a
// worker thread: each thread's heap after a full collection, the worker's own, and its garbage not counted.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO } from "../fixtures/repo.js";
import type { ThreadHeaps } from "../bench/inspector-heap.js";
import { runWithWebSocket, startInspected, stopInspected } from "./inspected.js";

const MiB = 1024 * 1024;

/**
 * A process whose worker holds ~`keptMiB` of small objects and has just dropped as much again (garbage no collection
 * has seen yet), while its main thread holds nearly nothing; "ready" on stdout once the worker is.
 */
const TARGET = `
const { Worker } = require("node:worker_threads");
const worker = new Worker(\`
  const { parentPort } = require("node:worker_threads");
  const fill = (mib) => Array.from({ length: mib * 8192 }, (_, i) => ({ i, s: "x".repeat(64) + i }));
  globalThis.kept = fill(Number(process.env.KEPT_MIB));
  let garbage = fill(Number(process.env.KEPT_MIB));
  garbage = undefined;
  parentPort.postMessage("ready");
  setInterval(() => {}, 1000);
\`, { eval: true });
worker.once("message", () => console.log("ready"));
`;

afterEach(stopInspected);

/** Starts TARGET (without its garbage when `garbage` is false) with its inspector on a free port; resolves with the port. */
function startTarget(keptMiB: number, garbage: boolean): Promise<number> {
  const script = garbage ? TARGET : TARGET.replace("let garbage = fill(Number(process.env.KEPT_MIB));", "let garbage;");
  return startInspected(script, { KEPT_MIB: String(keptMiB) });
}

/** threadHeaps as bench:soak runs it: built, in a node with WebSocket. */
function readHeaps(port: number): Promise<ThreadHeaps> {
  const module = join(REPO, "dist/test/bench/inspector-heap.js");
  return runWithWebSocket<ThreadHeaps>(`const { threadHeaps } = await import(${JSON.stringify(module)}); console.log(JSON.stringify(await threadHeaps(${port})));`);
}

describe("threadHeaps", () => {
  it("reads each thread's heap after a collection: the worker's kept objects, not its garbage, and not the main thread's", async () => {
    // The same kept objects in two processes, one of which has just dropped as much again.
    const [withGarbage, without] = await Promise.all([startTarget(40, true), startTarget(40, false)]);
    const [heaps, reference] = await Promise.all([readHeaps(withGarbage), readHeaps(without)]);
    expect(heaps.workers).toHaveLength(1);
    const worker = heaps.workers[0]!.used;
    // 40 "MiB" of objects as counted above is more than 40 MiB of heap; uncollected garbage would double it.
    expect(worker).toBeGreaterThan(40 * MiB);
    expect(worker / reference.workers[0]!.used).toBeGreaterThan(0.8);
    expect(worker / reference.workers[0]!.used).toBeLessThan(1.25);
    expect(heaps.main).toBeLessThan(10 * MiB);
  }, 90_000);
});

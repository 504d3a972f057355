// bench:heap-in-flight's reading of a heap snapshot (test/bench/heap-graph.ts, through inspector-heap.ts) against a real
// node process: what a set of objects alone keeps alive, what they share with others left out, and a suspended async
// function found by its name.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO } from "../fixtures/repo.js";
import { runWithWebSocket, startInspected, stopInspected } from "./inspected.js";

afterEach(stopInspected);

/**
 * 200 Holders, each with a string of 20,000 characters of its own and one object they all share with a global; with
 * SHARE=1 the global array holds every string too. An async function `waiter` suspended on a promise that never
 * settles (its resolver kept, as a write waiting for its flush is) keeps a string of a million characters in its frame.
 */
const TARGET = `
class Holder { constructor(text, shared) { this.text = text; this.shared = shared; } }
const shared = { big: "s".repeat(500000) };
globalThis.sharedToo = shared;
globalThis.holders = Array.from({ length: 200 }, (_, i) => new Holder(Buffer.alloc(20000, "x" + i).toString("latin1"), shared));
if (process.env.SHARE === "1") globalThis.texts = globalThis.holders.map((h) => h.text);
async function waiter() { const kept = Buffer.alloc(1000000, "w").toString("latin1"); await new Promise((resolve) => { globalThis.release = resolve; }); return kept.length; }
globalThis.waiting = waiter();
console.log("ready");
setInterval(() => {}, 1000);
`;

interface Reading {
  readonly holders: { readonly holders: number; readonly bytes: number };
  readonly waiter: { readonly holders: number; readonly bytes: number };
}

/** Snapshot and analysis as heap-in-flight runs them: built, in a node with WebSocket. */
function read(port: number): Promise<Reading> {
  const dir = join(REPO, "dist/test/bench");
  return runWithWebSocket<Reading>(`
    const { mainHeapSnapshot } = await import(${JSON.stringify(join(dir, "inspector-heap.js"))});
    const { heapGraph, retainedOnlyBy, generatorFunction } = await import(${JSON.stringify(join(dir, "heap-graph.js"))});
    const g = heapGraph(await mainHeapSnapshot(${port}));
    const holders = retainedOnlyBy(g, (i) => g.type(i) === "object" && g.name(i) === "Holder");
    const waiter = retainedOnlyBy(g, (i) => g.type(i) === "object" && g.name(i) === "Generator" && generatorFunction(g, i) === "waiter");
    console.log(JSON.stringify({ holders, waiter }));`);
}

describe("retainedOnlyBy", () => {
  it("counts what only the picked objects keep alive, not what something else also reaches", async () => {
    const [alone, shared] = await Promise.all([startInspected(TARGET), startInspected(TARGET, { SHARE: "1" })]);
    const [a, s] = await Promise.all([read(alone), read(shared)]);
    expect(a.holders.holders).toBe(200);
    // 200 strings of 20,000 one-byte characters and the holders themselves; not the shared 500,000.
    expect(a.holders.bytes).toBeGreaterThan(200 * 20_000);
    expect(a.holders.bytes).toBeLessThan(200 * 20_000 + 100_000);
    // The same strings held by a global as well: only the holders' own few bytes are theirs alone.
    expect(s.holders.holders).toBe(200);
    expect(s.holders.bytes).toBeLessThan(20_000);
    // The suspended function's frame keeps its million characters.
    expect(a.waiter.holders).toBe(1);
    expect(a.waiter.bytes).toBeGreaterThan(1_000_000);
    expect(a.waiter.bytes).toBeLessThan(1_100_000);
  }, 90_000);
});

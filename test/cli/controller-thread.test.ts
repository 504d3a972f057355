// superviseThread with real worker threads: a thread that dies is started again, stop() ends it for good.
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { superviseThread } from "../../src/cli/commands/controller-thread.js";
import { silentLogger } from "../../src/logger.js";
import { until } from "../fixtures/wait.js";

// Exits with code 3 after `crashAfterMs` (when given); exits 0 when asked to stop.
const SCRIPT = `
  const { parentPort, workerData } = require("node:worker_threads");
  parentPort.on("message", (m) => { if (m.type === "stop") process.exit(0); });
  if (workerData.crashAfterMs !== undefined) setTimeout(() => process.exit(3), workerData.crashAfterMs);
`;

function starter(plan: (number | undefined)[]) {
  let started = 0;
  const workers: Worker[] = [];
  const start = async () => {
    const crashAfterMs = plan[started];
    started++;
    const worker = new Worker(SCRIPT, { eval: true, workerData: { crashAfterMs } });
    workers.push(worker);
    await new Promise((resolve) => worker.once("online", resolve));
    return { worker, ops: `thread-${started}` };
  };
  return { start, workers, started: () => started };
}

describe("superviseThread", () => {
  it("starts a thread that died again after the delay, and reports the new one", async () => {
    const s = starter([50, 50, undefined]);
    const thread = await superviseThread(s.start, silentLogger(), [20]);
    expect(thread.ops).toBe("thread-1");
    expect(await until(() => thread.restarts === 2)).toBe(true);
    expect(thread.ops).toBe("thread-3");
    await thread.stop();
    expect(s.workers[2]!.threadId).toBe(-1);
  });

  it("does not start a thread again after stop(), and ends one that ignores the stop message", async () => {
    const stubborn = `require("node:worker_threads").parentPort.on("message", () => {}); setInterval(() => {}, 1000);`;
    let started = 0;
    const thread = await superviseThread(
      async () => {
        started++;
        const worker = new Worker(stubborn, { eval: true });
        await new Promise((resolve) => worker.once("online", resolve));
        return { worker, ops: "x" };
      },
      silentLogger(),
      [10],
    );
    const t0 = Date.now();
    await thread.stop(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(started).toBe(1);
  });

  it("ends a thread that finishes starting after stop() was called", async () => {
    const workers: Worker[] = [];
    let calls = 0;
    const thread = await superviseThread(
      async () => {
        calls++;
        const worker = new Worker(SCRIPT, { eval: true, workerData: { crashAfterMs: calls === 1 ? 30 : undefined } });
        workers.push(worker);
        await new Promise((resolve) => worker.once("online", resolve));
        // The second start takes a while: stop() arrives in the middle of it.
        if (calls === 2) await new Promise((resolve) => setTimeout(resolve, 200));
        return { worker, ops: `thread-${calls}` };
      },
      silentLogger(),
      [10],
    );
    expect(await until(() => calls === 2)).toBe(true);
    await thread.stop();
    expect(await until(() => workers[1]!.threadId === -1)).toBe(true);
    expect(thread.restarts).toBe(0);
  });
});

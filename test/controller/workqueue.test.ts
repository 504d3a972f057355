import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/time/fake-clock.js";
import { ItemExponentialBackoff } from "../../src/time/backoff.js";
import { WorkQueue, type WorkQueueMetrics } from "../../src/controller/workqueue.js";

interface QueueFixture {
  clock: FakeClock;
  queue: WorkQueue;
  seen: Record<string, unknown[]>;
}

function fixture(options: { baseMs?: number; maxMs?: number } = {}): QueueFixture {
  const clock = new FakeClock();
  const seen: Record<string, unknown[]> = { depth: [], add: [], retry: [], queueLatency: [], workDuration: [] };
  const metrics: WorkQueueMetrics = {
    depth: (_n, d) => seen.depth!.push(d),
    add: (_n, k) => seen.add!.push(k),
    retry: (_n, k) => seen.retry!.push(k),
    queueLatency: (_n, ms) => seen.queueLatency!.push(ms),
    workDuration: (_n, ms) => seen.workDuration!.push(ms),
  };
  const queue = new WorkQueue({ name: "csr", clock, metrics, backoff: new ItemExponentialBackoff(options) });
  return { clock, queue, seen };
}

/** Takes every key queued right now. */
async function drain(queue: WorkQueue): Promise<string[]> {
  const out: string[] = [];
  while (queue.len() > 0) out.push((await queue.get())!);
  return out;
}

describe("WorkQueue", () => {
  it("hands keys out in the order they were first added and queues a key only once", async () => {
    const { queue } = fixture();
    for (const k of ["a", "b", "a", "c", "b"]) queue.add(k);
    expect(queue.len()).toBe(3);
    expect(await drain(queue)).toEqual(["a", "b", "c"]);
  });

  it("never gives a key to a second worker while the first holds it; a re-add waits for done", async () => {
    const { queue } = fixture();
    queue.add("a");
    const first = await queue.get();
    queue.add("a");
    expect(queue.len()).toBe(0);
    let second: string | undefined;
    void queue.get().then((k) => (second = k));
    await Promise.resolve();
    expect(second).toBeUndefined();
    queue.done(first!);
    await Promise.resolve();
    expect(second).toBe("a");
  });

  it("hands a waiting key out at once with tryGet, held as get() holds it, and nothing when none waits", () => {
    const { queue } = fixture();
    expect(queue.tryGet()).toBeUndefined();
    queue.add("a");
    queue.add("b");
    expect(queue.tryGet()).toBe("a");
    queue.add("a");
    expect(queue.inProcess()).toEqual(["a"]);
    expect(queue.tryGet()).toBe("b");
    expect(queue.tryGet()).toBeUndefined();
    queue.done("a");
    // A key `accept` refuses stays first in line.
    expect(queue.tryGet((k) => k !== "a")).toBeUndefined();
    expect(queue.len()).toBe(1);
    expect(queue.tryGet()).toBe("a");
  });

  it("wakes a waiting worker when a key arrives", async () => {
    const { queue } = fixture();
    const waiting = queue.get();
    queue.add("x");
    expect(await waiting).toBe("x");
    expect(queue.inProcess()).toEqual(["x"]);
  });

  it("delays addAfter keys on the clock and keeps the earlier time when added twice", async () => {
    const { clock, queue } = fixture();
    queue.addAfter("k", 1000);
    queue.addAfter("k", 5000);
    queue.addAfter("j", 1500);
    await clock.advance(999);
    expect(queue.len()).toBe(0);
    await clock.advance(1);
    expect(await drain(queue)).toEqual(["k"]);
    await clock.advance(500);
    expect(await drain(queue)).toEqual(["j"]);
    await clock.advance(10_000);
    expect(queue.len()).toBe(0);
  });

  it.each([
    ["doubles from the base", { baseMs: 100 }, [100, 200, 400, 800, 1600]],
    ["stops growing at the cap", { baseMs: 100, maxMs: 250 }, [100, 200, 250, 250, 250]],
  ])("backs a failing key off exponentially: %s", async (_name, options, expected) => {
    const { clock, queue, seen } = fixture(options);
    const readyAfter: number[] = [];
    for (let i = 0; i < expected.length; i++) {
      queue.addRateLimited("k");
      const start = clock.now();
      while (queue.len() === 0) await clock.advance(10);
      readyAfter.push(clock.now() - start);
      queue.done((await queue.get())!);
    }
    expect(readyAfter).toEqual(expected);
    expect(seen.retry).toHaveLength(expected.length);
  });

  it("starts a key's backoff over after forget", async () => {
    const { clock, queue } = fixture({ baseMs: 100 });
    for (let i = 0; i < 3; i++) queue.addRateLimited("k");
    expect(queue.numRequeues("k")).toBe(3);
    queue.forget("k");
    expect(queue.numRequeues("k")).toBe(0);
    await clock.advance(100);
    queue.done((await queue.get())!);
    queue.addRateLimited("k");
    await clock.advance(99);
    expect(queue.len()).toBe(0);
    await clock.advance(1);
    expect(queue.len()).toBe(1);
  });

  it("after shutDown ignores adds, drops delayed keys, drains what is queued, then answers undefined", async () => {
    const { clock, queue } = fixture();
    queue.add("a");
    queue.add("b");
    queue.addAfter("later", 100);
    queue.shutDown();
    queue.add("c");
    await clock.advance(1000);
    expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(["a", "b", undefined]);
    expect(queue.isShuttingDown()).toBe(true);
  });

  it("releases waiting workers on shutDown", async () => {
    const { queue } = fixture();
    const waiting = [queue.get(), queue.get()];
    queue.shutDown();
    expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
  });

  it("answers undefined to a get whose signal aborts, without losing a later key", async () => {
    const { queue } = fixture();
    const controller = new AbortController();
    const waiting = queue.get(controller.signal);
    controller.abort();
    expect(await waiting).toBeUndefined();
    queue.add("k");
    expect(await queue.get()).toBe("k");
  });

  it("shutDownWithDrain waits until every key in process is done", async () => {
    const { queue } = fixture();
    queue.add("a");
    const key = (await queue.get())!;
    queue.add("a");
    let drained = false;
    void queue.shutDownWithDrain().then(() => (drained = true));
    await Promise.resolve();
    queue.done(key);
    // The key re-added while in process is still handed out before the queue counts as drained.
    expect(drained).toBe(false);
    const again = await queue.get();
    expect(again).toBe("a");
    queue.done(again!);
    await new Promise((r) => setImmediate(r));
    expect(drained).toBe(true);
  });

  it("reports depth, adds, queue latency and work duration to the metrics hooks", async () => {
    const { clock, queue, seen } = fixture();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    await clock.advance(40);
    const key = (await queue.get())!;
    await clock.advance(25);
    queue.done(key);
    expect(seen.add).toEqual(["a", "b"]);
    expect(seen.depth).toEqual([1, 2, 1]);
    expect(seen.queueLatency).toEqual([40]);
    expect(seen.workDuration).toEqual([25]);
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { Informer } from "../../src/controller/informer.js";
import { enqueueHandlers, isTerminal, markTerminal, Runner, type SyncFn } from "../../src/controller/runner.js";
import { WorkQueue } from "../../src/controller/workqueue.js";
import { PlatformError } from "../../src/errors.js";
import { FakeStore } from "./fake-store.js";

interface Gate {
  promise: Promise<void>;
  open: () => void;
}

function gate(): Gate {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

interface Harness {
  clock: FakeClock;
  queue: WorkQueue;
  runner: Runner;
  /** Each sync call as `key@ms since start`. */
  calls: string[];
}

const runners: Runner[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
});

function harness(sync: (key: string, signal: AbortSignal, attempt: number) => Promise<void>, options: { workers?: number; stopTimeoutMs?: number } = {}): Harness {
  const clock = new FakeClock();
  const t0 = clock.now();
  const queue = new WorkQueue({ clock });
  const calls: string[] = [];
  const attempts = new Map<string, number>();
  const fn: SyncFn = (key, signal) => {
    calls.push(`${key}@${clock.now() - t0}`);
    const n = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, n);
    return sync(key, signal, n);
  };
  const runner = new Runner({ name: "test", queue, sync: fn, clock, ...options });
  runners.push(runner);
  return { clock, queue, runner, calls };
}

describe("Runner", () => {
  it("lets many workers wait and sync on its signals without a MaxListenersExceededWarning", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const seen: AbortSignal[] = [];
      const release = gate();
      const h = harness(async (_key, signal) => {
        // Each sync listens on the shared sync signal, as a client request in flight does.
        signal.addEventListener("abort", () => undefined, { once: true });
        seen.push(signal);
        await release.promise;
      }, { workers: 32 });
      h.runner.start();
      await h.clock.flush();
      for (let i = 0; i < 16; i++) h.queue.add(`k${i}`);
      await h.clock.flush();
      expect(seen).toHaveLength(16);
      release.open();
      await h.clock.flush();
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((n) => n === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("runs up to `workers` syncs at once and no more", async () => {
    const gates = new Map<string, Gate>();
    let active = 0;
    let peak = 0;
    const h = harness(async (key) => {
      active++;
      peak = Math.max(peak, active);
      const g = gate();
      gates.set(key, g);
      await g.promise;
      active--;
    }, { workers: 3 });
    for (const k of ["a", "b", "c", "d", "e"]) h.queue.add(k);
    h.runner.start();
    await h.clock.flush();
    expect([peak, h.runner.active().sort()]).toEqual([3, ["a", "b", "c"]]);
    gates.get("a")!.open();
    await h.clock.flush();
    expect(h.runner.active().sort()).toEqual(["b", "c", "d"]);
    for (const g of gates.values()) g.open();
    await h.clock.flush();
    for (const g of gates.values()) g.open();
    await h.clock.flush();
    expect(h.calls.map((c) => c.split("@")[0]).sort()).toEqual(["a", "b", "c", "d", "e"]);
    expect(peak).toBe(3);
  });

  it("syncs a key re-added during its sync once more afterwards, never twice at once", async () => {
    let concurrent = 0;
    let worst = 0;
    const first = gate();
    const h = harness(async (_key, _signal, attempt) => {
      concurrent++;
      worst = Math.max(worst, concurrent);
      if (attempt === 1) await first.promise;
      concurrent--;
    }, { workers: 4 });
    h.queue.add("k");
    h.runner.start();
    await h.clock.flush();
    h.queue.add("k");
    h.queue.add("k");
    await h.clock.flush();
    expect(h.calls).toEqual(["k@0"]);
    first.open();
    await h.clock.flush();
    expect([h.calls.length, worst]).toEqual([2, 1]);
  });

  it.each([
    ["a plain Error", () => new Error("socket hang up")],
    ["a retryable PlatformError", () => new PlatformError("STORAGE_UNAVAILABLE", "busy")],
    ["a conflict (not retryable by code, but not terminal)", () => new PlatformError("CONFLICT", "changed")],
  ])("retries a key with growing backoff after %s and forgets the failures once it succeeds", async (_name, error) => {
    const h = harness(async (_key, _signal, attempt) => {
      if (attempt <= 3) throw error();
    });
    h.queue.add("k");
    h.runner.start();
    await h.clock.advance(100);
    expect(h.calls).toEqual(["k@0", "k@5", "k@15", "k@35"]);
    expect(h.queue.numRequeues("k")).toBe(0);
  });

  it("forgets a key whose sync failed for good instead of retrying it", async () => {
    const h = harness(async () => {
      throw markTerminal(new PlatformError("SIGNER_REJECTED", "forbidden subject"));
    });
    h.queue.add("k");
    h.runner.start();
    await h.clock.advance(60_000);
    expect(h.calls).toEqual(["k@0"]);
    expect(h.queue.numRequeues("k")).toBe(0);
  });

  it("stops taking keys on stop and waits for the syncs in flight", async () => {
    const g = gate();
    const h = harness(async (key) => {
      if (key === "slow") await g.promise;
    });
    h.queue.add("slow");
    h.runner.start();
    await h.clock.flush();
    h.queue.add("waiting");
    let result: unknown;
    void h.runner.stop().then((r) => (result = r));
    await h.clock.advance(1000);
    expect(result).toBeUndefined();
    g.open();
    await h.clock.flush();
    expect(result).toEqual({ abandoned: [] });
    expect(h.calls).toEqual(["slow@0"]);
    expect(h.queue.isShuttingDown()).toBe(true);
  });

  it("aborts the syncs still running at the stop deadline and names them", async () => {
    let aborted = false;
    const h = harness((_key, signal) => new Promise<void>(() => signal.addEventListener("abort", () => (aborted = true))), { stopTimeoutMs: 5000 });
    h.queue.add("stuck");
    h.runner.start();
    await h.clock.flush();
    const stopping = h.runner.stop();
    await h.clock.advance(4999);
    expect(aborted).toBe(false);
    await h.clock.advance(1);
    expect(await stopping).toEqual({ abandoned: ["stuck"] });
    expect(aborted).toBe(true);
  });

  it("stops when the start signal aborts", async () => {
    const h = harness(async () => {});
    const controller = new AbortController();
    h.runner.start(controller.signal);
    controller.abort();
    await h.clock.flush();
    h.queue.add("after");
    await h.clock.flush();
    expect(h.calls).toEqual([]);
  });

  it.each([
    [{ workers: 0 }, "workers"],
    [{ workers: 1.5 }, "workers"],
    [{ stopTimeoutMs: -1 }, "stopTimeoutMs"],
  ])("refuses option %j", (bad, name) => {
    expect(() => new Runner({ name: "x", queue: new WorkQueue(), sync: async () => {}, ...bad })).toThrow(new RegExp(`\`${name}\``));
  });

  it("marks errors as terminal without changing them", () => {
    const err = new PlatformError("CSR_INVALID", "bad");
    expect(isTerminal(err)).toBe(false);
    expect(markTerminal(err)).toBe(err);
    expect([isTerminal(err), isTerminal("text"), isTerminal(null)]).toEqual([true, false, false]);
  });
});

describe("enqueueHandlers", () => {
  it("queues the key of every added, updated and deleted object that passes the filter", async () => {
    const clock = new FakeClock();
    const store = new FakeStore<ApiObject>();
    store.put(store.make("mine-1", { namespace: "ns" }));
    store.put(store.make("other"));
    const informer = new Informer({ listWatcher: store.client(), clock });
    const queue = new WorkQueue({ clock });
    informer.addHandlers(enqueueHandlers(queue, { filter: (o) => o.metadata.name!.startsWith("mine") }));
    informer.start();
    await informer.waitForSync();
    await clock.flush();
    const taken = async (): Promise<string[]> => {
      const keys: string[] = [];
      while (queue.len() > 0) {
        const k = (await queue.get())!;
        keys.push(k);
        queue.done(k);
      }
      return keys;
    };
    expect(await taken()).toEqual(["ns/mine-1"]);
    store.put(store.make("mine-2"));
    store.put(store.make("mine-1", { namespace: "ns", metadata: { labels: { a: "b" } } }));
    store.put(store.make("other", { metadata: { labels: { a: "b" } } }));
    store.remove("mine-2");
    await clock.flush();
    expect(await taken()).toEqual(["mine-2", "ns/mine-1"]);
    await informer.stop();
  });

  it("leaves deletions out when asked", () => {
    const handlers = enqueueHandlers(new WorkQueue(), { deletes: false });
    expect(handlers.onDelete).toBeUndefined();
  });
});

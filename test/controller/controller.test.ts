// The controller core through a minimal handler: workers, re-adds during a sync, retries with backoff, stop, informer feed.
import { afterEach, describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { Controller, type ControllerOptions, type SyncedSource } from "../../src/controller/controller.js";
import { Informer } from "../../src/controller/informer.js";
import { PlatformError } from "../../src/errors.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { FakeStore } from "./fake-store.js";

type SyncFn = (key: string, signal: AbortSignal) => Promise<void>;

/** A handler that syncs with `fn` and lets the test queue keys as informer handlers would. */
class TestController extends Controller {
  constructor(
    private readonly fn: SyncFn,
    options: ControllerOptions,
    sources: readonly SyncedSource[] = [],
    private readonly handlers: () => (() => void)[] = () => [],
  ) {
    super("test", sources, options);
  }

  add(key: string): void {
    this.queue.add(key);
  }

  /** takeWaiting and finish, for a sync that works several keys (as the signing controller in a burst). */
  take(n: number): string[] {
    return this.takeWaiting(n);
  }

  end(key: string, err?: unknown): void {
    this.finish(key, err === undefined ? undefined : { err });
  }

  get workQueue() {
    return this.queue;
  }

  protected sync(key: string, signal: AbortSignal): Promise<void> {
    return this.fn(key, signal);
  }

  protected subscribe(): (() => void)[] {
    return this.handlers();
  }
}

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
  controller: TestController;
  /** Starts the workers; aborting the signal stops them. */
  start: (signal?: AbortSignal) => void;
  /** Each sync call as `key@ms since start`. */
  calls: string[];
}

const controllers: Controller[] = [];
afterEach(async () => {
  await Promise.all(controllers.splice(0).map((c) => c.stop()));
});

function harness(sync: (key: string, signal: AbortSignal, attempt: number) => Promise<void>, options: { workers?: number; stopTimeoutMs?: number } = {}): Harness {
  const clock = new FakeClock();
  const t0 = clock.now();
  const calls: string[] = [];
  const attempts = new Map<string, number>();
  const fn: SyncFn = (key, signal) => {
    calls.push(`${key}@${clock.now() - t0}`);
    const n = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, n);
    return sync(key, signal, n);
  };
  const controller = new TestController(fn, { clock, ...options });
  controllers.push(controller);
  return { clock, controller, start: (signal = new AbortController().signal) => void controller.start(signal), calls };
}

describe("Controller", () => {
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
      h.start();
      await h.clock.flush();
      for (let i = 0; i < 16; i++) h.controller.add(`k${i}`);
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
    for (const k of ["a", "b", "c", "d", "e"]) h.controller.add(k);
    h.start();
    await h.clock.flush();
    expect([peak, h.controller.active().sort()]).toEqual([3, ["a", "b", "c"]]);
    gates.get("a")!.open();
    await h.clock.flush();
    expect(h.controller.active().sort()).toEqual(["b", "c", "d"]);
    for (const g of gates.values()) g.open();
    await h.clock.flush();
    for (const g of gates.values()) g.open();
    await h.clock.flush();
    expect(h.calls.map((c) => c.split("@")[0]).sort()).toEqual(["a", "b", "c", "d", "e"]);
    expect(peak).toBe(3);
  });

  it("lets a sync take waiting keys as its own: active until finished, a failed one retried with backoff", async () => {
    const taken: string[][] = [];
    const h = harness(async (key, _signal, attempt) => {
      if (key !== "a" || attempt > 1) return;
      const more = h.controller.take(2);
      taken.push(more);
      expect(h.controller.active().sort()).toEqual(["a", "b", "c"]);
      h.controller.end("b");
      h.controller.end("c", new PlatformError("CONFLICT", "try again", { retryable: true }));
    });
    for (const k of ["a", "b", "c", "d"]) h.controller.add(k);
    h.start();
    await h.clock.flush();
    expect(taken).toEqual([["b", "c"]]);
    // b and c were not synced on their own; c comes back after its backoff, d never waited for them.
    expect(h.calls.map((c) => c.split("@")[0])).toEqual(["a", "d"]);
    await h.clock.advance(1000);
    expect(h.calls.map((c) => c.split("@")[0])).toEqual(["a", "d", "c"]);
    expect(h.controller.active()).toEqual([]);
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
    h.controller.add("k");
    h.start();
    await h.clock.flush();
    h.controller.add("k");
    h.controller.add("k");
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
    h.controller.add("k");
    h.start();
    await h.clock.advance(100);
    expect(h.calls).toEqual(["k@0", "k@5", "k@15", "k@35"]);
    expect(h.controller.workQueue.numRequeues("k")).toBe(0);
  });

  it("stops taking keys on stop and waits for the syncs in flight", async () => {
    const g = gate();
    const h = harness(async (key) => {
      if (key === "slow") await g.promise;
    });
    h.controller.add("slow");
    h.start();
    await h.clock.flush();
    h.controller.add("waiting");
    let result: unknown;
    void h.controller.stop().then((r) => (result = r));
    await h.clock.advance(1000);
    expect(result).toBeUndefined();
    g.open();
    await h.clock.flush();
    expect(result).toEqual({ abandoned: [] });
    expect(h.calls).toEqual(["slow@0"]);
    expect(h.controller.workQueue.isShuttingDown()).toBe(true);
  });

  it("aborts the syncs still running at the stop deadline and names them", async () => {
    let aborted = false;
    const h = harness((_key, signal) => new Promise<void>(() => signal.addEventListener("abort", () => (aborted = true))), { stopTimeoutMs: 5000 });
    h.controller.add("stuck");
    h.start();
    await h.clock.flush();
    const stopping = h.controller.stop();
    await h.clock.advance(4999);
    expect(aborted).toBe(false);
    await h.clock.advance(1);
    expect(await stopping).toEqual({ abandoned: ["stuck"] });
    expect(aborted).toBe(true);
  });

  it("stops when the start signal aborts", async () => {
    const h = harness(async () => {});
    const controller = new AbortController();
    h.start(controller.signal);
    controller.abort();
    await h.clock.flush();
    h.controller.add("after");
    await h.clock.flush();
    expect(h.calls).toEqual([]);
  });

  it.each([
    [{ workers: 0 }, "workers"],
    [{ workers: 1.5 }, "workers"],
    [{ stopTimeoutMs: -1 }, "stopTimeoutMs"],
  ])("refuses option %j", (bad, name) => {
    expect(() => new TestController(async () => {}, bad)).toThrow(new RegExp(`\`${name}\``));
  });
});

describe("Controller fed by an informer", () => {
  it("waits for the cache, queues what its handlers add while subscribed, and unsubscribes on stop", async () => {
    const clock = new FakeClock();
    const store = new FakeStore<ApiObject>();
    store.put(store.make("mine-1", { namespace: "ns" }));
    store.put(store.make("other"));
    const informer = new Informer({ listWatcher: store.client(), clock });
    const synced: string[] = [];
    let c: TestController;
    let handled = 0;
    const enqueue = (o: ApiObject): void => {
      handled++;
      if (o.metadata.name!.startsWith("mine")) c.add(`${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`);
    };
    c = new TestController(async (key) => void synced.push(key), { clock }, [informer], () => [
      informer.addHandlers({ onAdd: enqueue, onUpdate: (_old, o) => enqueue(o), onDelete: enqueue }),
    ]);
    controllers.push(c);
    const started = c.start(new AbortController().signal);
    expect(c.ready()).toBe(false);
    informer.start();
    await started;
    await clock.flush();
    expect([c.ready(), synced]).toEqual([true, ["ns/mine-1"]]);
    store.put(store.make("mine-2"));
    store.put(store.make("other", { metadata: { labels: { a: "b" } } }));
    store.remove("mine-2");
    await clock.flush();
    expect(synced).toEqual(["ns/mine-1", "mine-2", "mine-2"]);
    await c.stop();
    expect(c.ready()).toBe(false);
    const before = handled;
    store.put(store.make("mine-3"));
    await clock.flush();
    expect([handled, synced.length]).toEqual([before, 3]);
    await informer.stop();
  });
});

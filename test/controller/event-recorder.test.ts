import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import type { Event, EventType } from "../../src/api/types/event.js";
import type { ResourceClient } from "../../src/client/types.js";
import { FakeClock, settle } from "../../src/time/fake-clock.js";
import { EventRecorder } from "../../src/controller/event-recorder.js";
import type { EventRecorderOptions, EventResult } from "../../src/controller/event-recorder-types.js";
import { truncateBytes } from "../../src/controller/event-text.js";
import { ControllerMetrics } from "../../src/controller/metrics.js";
import { PlatformError } from "../../src/errors.js";
import { FakeStore, type FakeClient } from "./fake-store.js";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { groupNames } from "../../src/api/group.js";
import { createClient } from "../../src/client/rest-client.js";
import { controllerResources } from "../../src/controller/controllers/controller-set.js";

const T0 = Date.UTC(2025, 0, 1);

function csr(name: string, uid = `uid-${name}`): ApiObject {
  return { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", metadata: { name, uid, resourceVersion: "7" } };
}

function setup(options: Partial<EventRecorderOptions> = {}) {
  const clock = new FakeClock(T0);
  const store = new FakeStore<Event>({ kind: "Event" });
  const client = store.client();
  const recorder = new EventRecorder({ client, reportingController: "csr-signing", reportingInstance: "replica-1", clock, ...options });
  const events = (): Event[] => [...store.objects.values()];
  return { clock, store, client, recorder, events };
}

interface Held {
  readonly op: "create" | "patch";
  /** The regarding object's name (the event name's prefix). */
  readonly regarding: string;
  readonly series: Event["series"];
  readonly answer: (failure?: Error) => void;
}

/** Holds every create and patch until the test answers it, counting the writes in flight and their peak. */
function gate(inner: FakeClient<Event>) {
  const held: Held[] = [];
  const started: string[] = [];
  const writes = { inFlight: 0, peak: 0 };
  const hold = async <R>(op: Held["op"], name: string, series: Event["series"], call: () => Promise<R>): Promise<R> => {
    writes.inFlight++;
    writes.peak = Math.max(writes.peak, writes.inFlight);
    const regarding = name.slice(0, name.lastIndexOf("."));
    started.push(`${op} ${regarding}`);
    try {
      const failure = await new Promise<Error | undefined>((answer) => held.push({ op, regarding, series, answer }));
      if (failure) throw failure;
      return await call();
    } finally {
      writes.inFlight--;
    }
  };
  const client: ResourceClient<Event> = {
    list: (params) => inner.list(params),
    watch: (params) => inner.watch(params),
    get: (name, options) => inner.get(name, options),
    create: (obj, params) => hold("create", obj.metadata.name ?? "", obj.series, () => inner.create(obj, params)),
    update: (obj) => inner.update(obj),
    patch: (name, type, patch, params) => hold("patch", name, (patch as { series: Event["series"] }).series, () => inner.patch(name, type, patch, params)),
    delete: (name, options) => inner.delete(name, options),
  };
  /** Answers the oldest write held (a failure when `failure` is given) and lets the recorder act on the answer. */
  const release = async (failure?: Error): Promise<void> => {
    const next = held.shift();
    if (!next) throw new Error("no write is held");
    next.answer(failure);
    await settle();
  };
  const releaseAll = async (): Promise<void> => {
    while (held.length > 0) await release();
  };
  return { client, held, started, writes, release, releaseAll };
}

/** A recorder whose writes wait for the test; `results` collects what `onResult` reports. */
function gatedSetup(options: Partial<EventRecorderOptions> = {}) {
  const clock = new FakeClock(T0);
  const store = new FakeStore<Event>({ kind: "Event" });
  const g = gate(store.client());
  const results: EventResult[] = [];
  const warnings: Record<string, unknown>[] = [];
  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
  const recorder = new EventRecorder({
    client: g.client,
    reportingController: "csr-signing",
    reportingInstance: "replica-1",
    clock,
    logger,
    rateLimit: false,
    onResult: (r) => results.push(r),
    ...options,
  });
  const events = (): Event[] => [...store.objects.values()];
  const emit = (name: string): void => recorder.event(csr(name), "Normal", "Issued", "Sign", "n");
  return { ...g, clock, store, recorder, events, results, warnings, emit };
}

const count = (results: readonly EventResult[], result: EventResult): number => results.filter((r) => r === result).length;

describe("EventRecorder", () => {
  it("writes an events/v1 Event about a cluster-scoped object into the default namespace", async () => {
    const { recorder, events } = setup();
    recorder.event(csr("node-1"), "Normal", "Issued", "Sign", "certificate issued by platform.io/nodeagent-serving");
    await recorder.flush();
    const [ev] = events();
    expect(ev).toMatchObject({
      apiVersion: "events.platform.io/v1",
      kind: "Event",
      metadata: { name: `node-1.${(BigInt(T0) * 1_000_000n).toString(16)}`, namespace: "default" },
      eventTime: "2025-01-01T00:00:00.000000Z",
      type: "Normal",
      reason: "Issued",
      action: "Sign",
      note: "certificate issued by platform.io/nodeagent-serving",
      regarding: { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", name: "node-1", uid: "uid-node-1", resourceVersion: "7" },
      reportingController: "csr-signing",
      reportingInstance: "replica-1",
    });
    expect(ev!.series).toBeUndefined();
  });

  it("puts an event about a namespaced object in that namespace and carries the related object", async () => {
    const { recorder, events } = setup();
    recorder.event({ kind: "Lease", namespace: "platform-system", name: "lock" }, "Warning", "LeaderLost", "Renew", "lost", { kind: "Pod", namespace: "platform-system", name: "p" });
    await recorder.flush();
    expect(events()[0]).toMatchObject({ metadata: { namespace: "platform-system" }, related: { kind: "Pod", name: "p" } });
  });

  it("speaks the configured group suffix", async () => {
    const { recorder, events } = setup({ groupSuffix: "k8s.io" });
    recorder.event(csr("a"), "Normal", "R", "A", "n");
    await recorder.flush();
    expect(events()[0]!.apiVersion).toBe("events.k8s.io/v1");
  });

  it("folds repeats within the window into one Event's series and starts a new Event after the window", async () => {
    const { recorder, events, clock, client } = setup();
    const emit = (): void => recorder.event(csr("a"), "Warning", "SignFailed", "Sign", "CA not ready");
    emit();
    await recorder.flush();
    for (const step of [60_000, 120_000]) {
      await clock.advance(step);
      emit();
      await recorder.flush();
    }
    expect(events()).toHaveLength(1);
    expect(events()[0]!.series).toEqual({ count: 3, lastObservedTime: "2025-01-01T00:03:00.000000Z" });
    expect(events()[0]!.eventTime).toBe("2025-01-01T00:00:00.000000Z");
    expect(client.count("patch")).toBe(2);
    await clock.advance(6 * 60_000 + 1);
    emit();
    await recorder.flush();
    expect(events()).toHaveLength(2);
    expect(events()[1]!.series).toBeUndefined();
  });

  it.each([
    ["note", ["Warning", "SignFailed", "Sign", "other note"]],
    ["reason", ["Warning", "Other", "Sign", "CA not ready"]],
    ["type", ["Normal", "SignFailed", "Sign", "CA not ready"]],
    ["action", ["Warning", "SignFailed", "Retry", "CA not ready"]],
  ] as const)("keeps events apart when the %s differs", async (_field, [type, reason, action, note]) => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), "Warning", "SignFailed", "Sign", "CA not ready");
    recorder.event(csr("a"), type as EventType, reason, action, note);
    await recorder.flush();
    expect(events()).toHaveLength(2);
    expect(new Set(events().map((e) => e.metadata.name)).size).toBe(2);
  });

  it("coalesces repeats that arrive while a write is in flight", async () => {
    const { recorder, events, client } = setup();
    for (let i = 0; i < 10; i++) recorder.event(csr("a"), "Normal", "Issued", "Sign", "same");
    await recorder.flush();
    expect(events()[0]!.series?.count).toBe(10);
    expect(client.count("create") + client.count("patch")).toBeLessThanOrEqual(2);
  });

  it("cuts reason and action to 128 characters and the note to 1 KiB on a character boundary", async () => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), "Normal", "R".repeat(300), "A".repeat(129), "é".repeat(1000));
    await recorder.flush();
    const ev = events()[0]!;
    expect([ev.reason!.length, ev.action!.length]).toEqual([128, 128]);
    expect(Buffer.byteLength(ev.note!)).toBe(1024);
    expect(ev.note).toBe("é".repeat(512));
  });

  it("never throws or waits on a failing server, and recovers when it is back", async () => {
    const { recorder, events, client } = setup();
    client.down = true;
    expect(() => recorder.event(csr("a"), "Normal", "Issued", "Sign", "x")).not.toThrow();
    await recorder.flush();
    expect(events()).toHaveLength(0);
    client.down = false;
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    expect(events()[0]!.series?.count).toBe(2);
  });

  it("writes the series as a new Event when the old one was deleted", async () => {
    const { recorder, events, store } = setup();
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    store.remove(`default/${events()[0]!.metadata.name}`);
    recorder.event(csr("a"), "Normal", "Issued", "Sign", "x");
    await recorder.flush();
    expect(events()).toHaveLength(1);
    expect(events()[0]!.series?.count).toBe(2);
  });

  it.each([
    ["an empty reason", ["Normal", "", "Sign"]],
    ["an empty action", ["Normal", "Issued", ""]],
    ["an unknown type", ["Info", "Issued", "Sign"]],
  ])("drops an event with %s without throwing", async (_name, [type, reason, action]) => {
    const { recorder, events } = setup();
    recorder.event(csr("a"), type as EventType, reason!, action!, "n");
    await recorder.flush();
    expect(events()).toHaveLength(0);
  });

  it("limits each object to its burst, then one event per refill period, without touching other objects", async () => {
    const { recorder, events, clock } = setup({ rateLimit: { burst: 25, qps: 1 / 300 } });
    for (let i = 0; i < 30; i++) recorder.event(csr("noisy"), "Normal", "Step", "Sign", `step ${i}`);
    recorder.event(csr("quiet"), "Normal", "Step", "Sign", "one");
    await recorder.flush();
    const count = (name: string): number => events().filter((e) => e.regarding?.name === name).length;
    expect([count("noisy"), count("quiet")]).toEqual([25, 1]);
    await clock.advance(300_000);
    recorder.event(csr("noisy"), "Normal", "Step", "Sign", "later 1");
    recorder.event(csr("noisy"), "Normal", "Step", "Sign", "later 2");
    await recorder.flush();
    expect(count("noisy")).toBe(26);
  });

  it("forgets the least recently used series past cacheSize", async () => {
    const { recorder, events } = setup({ cacheSize: 2 });
    for (const name of ["a", "b", "c", "a"]) recorder.event(csr(name), "Normal", "R", "A", "n");
    await recorder.flush();
    expect(events().filter((e) => e.regarding?.name === "a")).toHaveLength(2);
  });

  it.each([
    [{ reportingController: "" }, "reportingController"],
    [{ reportingInstance: "x".repeat(129) }, "reportingInstance"],
    [{ seriesWindowMs: 0 }, "seriesWindowMs"],
    [{ cacheSize: 0 }, "cacheSize"],
    [{ rateLimit: { burst: 0, qps: 1 } }, "rateLimit"],
    [{ maxInFlight: 0 }, "maxInFlight"],
    [{ maxInFlight: 2.5 }, "maxInFlight"],
    [{ maxInFlightWhileBusy: 0 }, "maxInFlightWhileBusy"],
    [{ maxInFlight: 2, maxInFlightWhileBusy: 3 }, "maxInFlightWhileBusy"],
    [{ maxQueued: 0 }, "maxQueued"],
    [{ maxQueued: Number.POSITIVE_INFINITY }, "maxQueued"],
  ])("refuses option %j", (bad, name) => {
    expect(() => setup(bad)).toThrow(new RegExp(`\`${name}\``));
  });
});

describe("EventRecorder delivery", () => {
  it("writes at most maxInFlight events at once and takes queued series first in, first out", async () => {
    const { recorder, emit, held, started, writes, release, releaseAll, events } = gatedSetup({ maxInFlight: 3 });
    const names = Array.from({ length: 10 }, (_, i) => `c${i}`);
    for (const name of names) emit(name);
    expect([held.length, recorder.queued, writes.inFlight]).toEqual([3, 7, 3]);
    // Answer out of the writers' order: the queue still hands out series in the order they were recorded.
    held.push(held.shift()!);
    await release();
    expect(started).toEqual(["create c0", "create c1", "create c2", "create c3"]);
    expect(recorder.queued).toBe(6);
    await releaseAll();
    await recorder.flush();
    expect(started).toEqual(names.map((n) => `create ${n}`));
    expect(writes.peak).toBe(3);
    expect(events().map((e) => e.regarding?.name).sort()).toEqual(names);
    expect(recorder.queued).toBe(0);
  });

  it("yields to a backlog: one writer while busy() holds, every writer again once it clears, order kept", async () => {
    let busy = true;
    const { recorder, emit, held, started, release, releaseAll, writes, events } = gatedSetup({ maxInFlight: 4, busy: () => busy });
    const names = Array.from({ length: 12 }, (_, i) => `c${i}`);
    for (const name of names) emit(name);
    expect([held.length, recorder.queued]).toEqual([1, 11]);
    await release();
    expect([held.length, recorder.queued]).toEqual([1, 10]);
    // The backlog cleared: the next write that ends lets the other writers in.
    busy = false;
    await release();
    expect([held.length, recorder.queued]).toEqual([4, 6]);
    busy = true;
    await release();
    expect(held.length).toBe(3);
    await releaseAll();
    await recorder.flush();
    expect(writes.peak).toBe(4);
    expect(started).toEqual(names.map((n) => `create ${n}`));
    expect(events()).toHaveLength(12);
  });

  it("keeps writing while busy() throws (logged) and with maxInFlightWhileBusy writers when it holds", async () => {
    const failing = gatedSetup({ maxInFlight: 3, busy: () => { throw new Error("no queue"); } });
    for (const name of ["a", "b", "c", "d"]) failing.emit(name);
    expect(failing.held.length).toBe(3);
    await failing.releaseAll();
    await failing.recorder.flush();
    expect(failing.events()).toHaveLength(4);
    // Asked at every write, warned once per 10 s.
    const busyWarnings = () => failing.warnings.filter((w) => w.msg === "event busy callback failed").length;
    expect(busyWarnings()).toBe(1);
    await failing.clock.advance(10_000);
    failing.emit("e");
    await failing.releaseAll();
    expect(busyWarnings()).toBe(2);

    const two = gatedSetup({ maxInFlight: 4, maxInFlightWhileBusy: 2, busy: () => true });
    for (const name of ["a", "b", "c", "d", "e"]) two.emit(name);
    expect([two.held.length, two.recorder.queued]).toEqual([2, 3]);
    await two.releaseAll();
    await two.recorder.flush();
    expect(two.writes.peak).toBe(2);
  });

  it("keeps the order over thousands of queued series (the queue compacts as it drains)", async () => {
    const { recorder, emit, started, release, releaseAll } = gatedSetup({ maxInFlight: 1 });
    const names = Array.from({ length: 3000 }, (_, i) => `c${i}`);
    for (const name of names.slice(0, 2000)) emit(name);
    for (let i = 0; i < 1500; i++) await release();
    for (const name of names.slice(2000)) emit(name);
    expect(recorder.queued).toBe(1499);
    await releaseAll();
    await recorder.flush();
    expect(started).toEqual(names.map((n) => `create ${n}`));
  });

  it("writes one series with one writer; repeats during a write make one follow-up at the back of the queue", async () => {
    const { recorder, emit, held, started, release, releaseAll, events } = gatedSetup({ maxInFlight: 1 });
    emit("a");
    emit("b");
    for (let i = 0; i < 5; i++) emit("a");
    expect([held.length, recorder.queued]).toEqual([1, 1]);
    await release();
    expect(started).toEqual(["create a", "create b"]);
    await release();
    expect(started).toEqual(["create a", "create b", "patch a"]);
    expect(held[0]!.series).toEqual({ count: 6, lastObservedTime: "2025-01-01T00:00:00.000000Z" });
    await releaseAll();
    await recorder.flush();
    expect(started).toHaveLength(3);
    expect(events().find((e) => e.regarding?.name === "a")!.series?.count).toBe(6);
  });

  it("drops a new series when the queue is full, folds repeats of queued and in-flight series, and accepts again once there is room", async () => {
    const { recorder, emit, held, results, releaseAll, events } = gatedSetup({ maxInFlight: 1, maxQueued: 2 });
    emit("a");
    emit("b");
    emit("c");
    expect([held.length, recorder.queued]).toEqual([1, 2]);
    emit("d");
    expect(results).toEqual(["dropped"]);
    for (let i = 0; i < 3; i++) emit("b");
    emit("a");
    expect(results).toEqual(["dropped"]);
    expect(recorder.queued).toBe(2);
    await releaseAll();
    await recorder.flush();
    const byName = new Map(events().map((e) => [e.regarding!.name, e]));
    expect([...byName.keys()].sort()).toEqual(["a", "b", "c"]);
    expect([byName.get("a")!.series?.count, byName.get("b")!.series?.count, byName.get("c")!.series]).toEqual([2, 4, undefined]);
    // a create, b create, c create, a's follow-up patch.
    expect([count(results, "written"), count(results, "dropped")]).toEqual([4, 1]);
    emit("d");
    await releaseAll();
    await recorder.flush();
    expect(events().some((e) => e.regarding?.name === "d")).toBe(true);
  });

  it("drops a repeat of a series already written when the queue is full, without counting it in the series", async () => {
    const { recorder, emit, results, release, releaseAll, events } = gatedSetup({ maxInFlight: 1, maxQueued: 1 });
    emit("a");
    await release();
    emit("b");
    emit("c");
    emit("a");
    expect(results).toEqual(["written", "dropped"]);
    await releaseAll();
    emit("a");
    await releaseAll();
    await recorder.flush();
    expect(events().find((e) => e.regarding?.name === "a")!.series?.count).toBe(2);
  });

  it("warns about drops at most once per 10 s, with the number dropped since the last warning", async () => {
    const { emit, clock, warnings } = gatedSetup({ maxInFlight: 1, maxQueued: 1 });
    const dropWarnings = (): unknown[] => warnings.filter((w) => w.msg === "event queue full; events dropped").map((w) => w.dropped);
    emit("in-flight");
    emit("queued");
    emit("d1");
    expect(dropWarnings()).toEqual([1]);
    emit("d2");
    emit("d3");
    await clock.advance(9_999);
    emit("d4");
    expect(dropWarnings()).toEqual([1]);
    await clock.advance(1);
    emit("d5");
    expect(dropWarnings()).toEqual([1, 4]);
  });

  it("flush(timeout) gives up after the timeout: what is still queued is dropped, writes in flight finish alone", async () => {
    const { recorder, emit, release, results, warnings, clock, events } = gatedSetup({ maxInFlight: 1 });
    emit("a");
    emit("b");
    emit("c");
    let flushed = false;
    void recorder.flush(5_000).then(() => (flushed = true));
    await clock.advance(4_999);
    expect([flushed, recorder.queued]).toEqual([false, 2]);
    await clock.advance(1);
    await settle();
    expect([flushed, recorder.queued, count(results, "dropped")]).toEqual([true, 0, 2]);
    expect(warnings.find((w) => w.msg === "events still queued at shutdown were dropped")).toMatchObject({ dropped: 2, timeoutMs: 5_000 });
    await release();
    expect(events().map((e) => e.regarding?.name)).toEqual(["a"]);
    expect(count(results, "written")).toBe(1);
  });

  it("flush(timeout) that drains in time drops nothing and leaves no timer behind", async () => {
    const { recorder, emit, release, results, clock } = gatedSetup({ maxInFlight: 1 });
    emit("a");
    const flushed = recorder.flush(5_000);
    await release();
    await flushed;
    await clock.advance(10_000);
    expect(results).toEqual(["written"]);
  });

  it("flush() waits for queued writes and writes in flight, follow-ups included", async () => {
    const { recorder, emit, release } = gatedSetup({ maxInFlight: 1 });
    await recorder.flush();
    emit("a");
    emit("b");
    emit("a");
    let flushed = false;
    void recorder.flush().then(() => (flushed = true));
    await settle();
    expect(flushed).toBe(false);
    await release();
    expect([flushed, recorder.queued]).toEqual([false, 1]);
    await release();
    expect([flushed, recorder.queued]).toEqual([false, 0]);
    await release();
    expect(flushed).toBe(true);
  });

  it("reports a failed write and goes on with the queue", async () => {
    const { recorder, emit, held, results, release, releaseAll, events, writes } = gatedSetup({ maxInFlight: 1 });
    emit("a");
    emit("b");
    emit("c");
    await release(new PlatformError("INTERNAL", "injected"));
    expect(results).toEqual(["failed"]);
    expect(held.map((h) => h.regarding)).toEqual(["b"]);
    await releaseAll();
    await recorder.flush();
    expect(results).toEqual(["failed", "written", "written"]);
    expect(events().map((e) => e.regarding?.name).sort()).toEqual(["b", "c"]);
    expect(writes.inFlight).toBe(0);
  });

  it("goes on when onResult throws", async () => {
    const { recorder, emit, releaseAll, events } = gatedSetup({
      maxInFlight: 1,
      onResult: () => {
        throw new Error("observer broke");
      },
    });
    emit("a");
    emit("b");
    await releaseAll();
    expect(events()).toHaveLength(2);
    await recorder.flush();
  });

  it("feeds platform_ca_events_total and platform_ca_events_queued", async () => {
    const metrics = new ControllerMetrics();
    const { recorder, emit, release, releaseAll } = gatedSetup({ maxInFlight: 1, maxQueued: 2, onResult: metrics.eventResult() });
    metrics.watchEventQueue(recorder);
    const scrape = async (): Promise<string> => (await metrics.scrape()).body;
    expect(await scrape()).toMatch(/^platform_ca_events_total\{result="dropped"\} 0$/m);
    for (const name of ["a", "b", "c", "d"]) emit(name);
    await release(new PlatformError("INTERNAL", "injected"));
    const body = await scrape();
    expect(body).toMatch(/^platform_ca_events_queued 1$/m);
    expect(body).toMatch(/^platform_ca_events_total\{result="dropped"\} 1$/m);
    expect(body).toMatch(/^platform_ca_events_total\{result="failed"\} 1$/m);
    await releaseAll();
    await recorder.flush();
    expect(await scrape()).toMatch(/^platform_ca_events_queued 0$/m);
    expect(await scrape()).toMatch(/^platform_ca_events_total\{result="written"\} 2$/m);
  });
});

describe("truncateBytes", () => {
  it.each([
    ["ascii", "abcdef", 4, "abcd"],
    ["short text", "abc", 10, "abc"],
    ["a 4-byte character at the cut", "ab😀", 5, "ab"],
    ["a 3-byte character ending at the cut", "a€", 4, "a€"],
  ])("cuts %s without splitting a character", (_name, text, max, expected) => {
    expect(truncateBytes(text, max)).toBe(expected);
  });
});

describe("event names", () => {
  it.each([
    ["example.com:foo:abc123", "example.com-foo-abc123"],
    ["Node-CSR-1", "node-csr-1"],
    ["--x--", "x"],
    [":::", "object"],
    ["a".repeat(300), "a".repeat(230)],
  ])("turns %j into the valid prefix %j", async (name, prefix) => {
    const { eventNamePrefix } = await import("../../src/controller/event-text.js");
    expect(eventNamePrefix(name)).toBe(prefix);
  });
});

describe("EventRecorder batches and throttling", () => {
  const throttled = (retryAfterSeconds?: number) =>
    new PlatformError("TOO_MANY_REQUESTS", "too many requests, please try again later", { details: retryAfterSeconds === undefined ? {} : { retryAfterSeconds } });

  it("pauses every writer for a 429's Retry-After, keeps the throttled event first in line, and loses nothing", async () => {
    const { recorder, emit, held, started, release, releaseAll, clock, results, events, warnings } = gatedSetup({ maxInFlight: 2 });
    emit("a");
    emit("b");
    emit("c");
    await release(throttled(3));
    expect(count(results, "throttled")).toBe(1);
    // b was already in flight and finishes; nothing new starts during the pause, but recording goes on at once.
    await release();
    emit("d");
    expect([held.length, recorder.queued]).toEqual([0, 3]);
    await clock.advance(2_999);
    expect(held.length).toBe(0);
    await clock.advance(1);
    await settle();
    expect(held.map((h) => h.regarding)).toEqual(["a", "c"]);
    await releaseAll();
    await recorder.flush();
    expect(started).toEqual(["create a", "create b", "create a", "create c", "create d"]);
    expect(events().map((e) => e.regarding?.name).sort()).toEqual(["a", "b", "c", "d"]);
    expect([count(results, "written"), count(results, "failed"), count(results, "dropped")]).toEqual([4, 0, 0]);
    expect(warnings.filter((w) => w.msg === "the server throttles event writes (429); events pause and stay queued")).toHaveLength(1);
  });

  it("backs off exponentially on 429s without Retry-After, and starts over after a write succeeds", async () => {
    const { recorder, emit, held, release, clock } = gatedSetup({ maxInFlight: 1, throttleBackoff: { initialMs: 1000, maxMs: 30_000, jitter: 0 } });
    emit("a");
    const pauseAfter = async (failure?: Error): Promise<number> => {
      await release(failure);
      const from = clock.now();
      while (held.length === 0) await clock.advance(100);
      return clock.now() - from;
    };
    expect(await pauseAfter(throttled())).toBe(1000);
    expect(await pauseAfter(throttled())).toBe(2000);
    expect(await pauseAfter(throttled())).toBe(4000);
    await release();
    emit("b");
    expect(await pauseAfter(throttled())).toBe(1000);
    await release();
    await recorder.flush();
  });

  it("on stop, flush(timeout) bounds the wait for a throttled queue; flush() without one writes it all after the pause", async () => {
    const bounded = gatedSetup({ maxInFlight: 1 });
    bounded.emit("a");
    bounded.emit("b");
    await bounded.release(throttled(60));
    let done = false;
    void bounded.recorder.flush(5_000).then(() => (done = true));
    await bounded.clock.advance(5_000);
    await settle();
    expect([done, count(bounded.results, "dropped")]).toEqual([true, 2]);

    const patient = gatedSetup({ maxInFlight: 1 });
    patient.emit("a");
    await patient.release(throttled(2));
    let flushed = false;
    void patient.recorder.flush().then(() => (flushed = true));
    await patient.clock.advance(2_000);
    await settle();
    expect(flushed).toBe(false);
    await patient.release();
    expect(flushed).toBe(true);
    expect(patient.events().map((e) => e.regarding?.name)).toEqual(["a"]);
  });

  it("with batchDelayMs, the first event waits (wall time) for others and the batch is written together; a quiet queue opens a new window", async () => {
    const { recorder, emit, held, release, releaseAll, writes } = gatedSetup({ maxInFlight: 4, batchDelayMs: 60 });
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    emit("a");
    await wait(20);
    emit("b");
    emit("c");
    expect(held.length).toBe(0);
    await wait(80);
    expect(held.map((h) => h.regarding)).toEqual(["a", "b", "c"]);
    // While the batch drains, later events join it without waiting.
    emit("d");
    expect(held.length).toBe(4);
    await releaseAll();
    await recorder.flush();
    emit("e");
    await settle();
    expect(held.length).toBe(0);
    await wait(100);
    expect(held.map((h) => h.regarding)).toEqual(["e"]);
    await release();
    expect(writes.peak).toBe(4);
  });

  it("writes on after a pause whose timer fires a millisecond before the clock reaches its end", async () => {
    // Node's timers and the wall clock round apart: a 1,000-ms timer may find Date.now() 999 ms on.
    const fake = new FakeClock(T0);
    const early = { now: () => fake.now(), sleep: (ms: number, signal?: AbortSignal) => fake.sleep(ms, signal), setTimer: (ms: number, fn: () => void) => fake.setTimer(ms > 1 ? ms - 1 : ms, fn) };
    const { recorder, emit, held, release, results } = gatedSetup({ clock: early, maxInFlight: 1, batchDelayMs: 0 });
    emit("a");
    await release(throttled(1));
    await fake.advance(1_000);
    await settle();
    expect(held.map((h) => h.regarding)).toEqual(["a"]);
    await release();
    await recorder.flush();
    expect(results).toEqual(["throttled", "written"]);
  });

  it("honours a real server's 429 and Retry-After header through the client, and writes everything once it is over", async () => {
    const posts: number[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        posts.push(Date.now());
        if (posts.length <= 2) {
          res.writeHead(429, { "Content-Type": "application/json", "Retry-After": "1" });
          return res.end(JSON.stringify({ apiVersion: "v1", kind: "Status", status: "Failure", reason: "TooManyRequests", code: 429, message: "too many requests" }));
        }
        res.writeHead(201, { "Content-Type": "application/json" });
        res.end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const client = createClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tls: {}, credentials: { type: "none" }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
    try {
      const results: EventResult[] = [];
      const recorder = new EventRecorder({ client: controllerResources(client, groupNames()).events, reportingController: "c", reportingInstance: "i", rateLimit: false, maxInFlight: 1, onResult: (r) => results.push(r) });
      const started = Date.now();
      for (const name of ["a", "b", "c"]) recorder.event(csr(name), "Normal", "Issued", "Sign", "n");
      // Recording never waits for the server.
      expect(Date.now() - started).toBeLessThan(50);
      await recorder.flush();
      expect(results).toEqual(["throttled", "throttled", "written", "written", "written"]);
      // Each 429 paused the writer for the second the server asked for.
      expect(posts[1]! - posts[0]!).toBeGreaterThanOrEqual(990);
      expect(posts[2]! - posts[1]!).toBeGreaterThanOrEqual(990);
    } finally {
      client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

import { afterEach, describe, expect, it } from "vitest";
import type { ApiObject, ManagedFieldsEntry } from "../../src/api/meta.js";
import type { ListParams, WatchParams } from "../../src/client/types.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { Informer, objectKey, stripManagedFields, type InformerOptions } from "../../src/controller/informer.js";
import { PlatformError } from "../../src/errors.js";
import { FakeStore, type FakeClient } from "./fake-store.js";
import { fullGc } from "../fixtures/gc.js";

interface Thing extends ApiObject {
  spec?: { value?: number };
}

interface Setup {
  store: FakeStore<Thing>;
  client: FakeClient<Thing>;
  clock: FakeClock;
  informer: Informer<Thing>;
  /** Handler calls as `add name@rv`, `update name@rv->rv`, `delete name@rv`. */
  seen: string[];
}

const running: Informer<Thing>[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((i) => i.stop()));
});

function setup(options: { names?: string[]; goneAsEvent?: boolean; informer?: Partial<InformerOptions<Thing>> } = {}): Setup {
  const clock = new FakeClock();
  const store = new FakeStore<Thing>({ kind: "Thing", now: () => clock.now(), goneAsEvent: options.goneAsEvent });
  for (const name of options.names ?? []) store.put(store.make(name, { spec: { value: 1 } }));
  const client = store.client();
  const informer = new Informer<Thing>({ listWatcher: client, clock, random: () => 0, stallTimeoutMs: 60_000, ...options.informer });
  const seen: string[] = [];
  const at = (o: Thing): string => `${o.metadata.name}@${o.metadata.resourceVersion}`;
  informer.addHandlers({
    onAdd: (o, initial) => seen.push(`add ${at(o)}${initial ? " initial" : ""}`),
    onUpdate: (a, b) => seen.push(`update ${at(a)}->${b.metadata.resourceVersion}`),
    onDelete: (o) => seen.push(`delete ${at(o)}`),
  });
  running.push(informer);
  return { store, client, clock, informer, seen };
}

async function started(s: Setup): Promise<Setup> {
  s.informer.start();
  expect(await s.informer.waitForSync()).toBe(true);
  await s.clock.flush();
  s.seen.length = 0;
  return s;
}

const listCalls = (c: FakeClient<Thing>) => c.calls.filter((x) => x.op === "list").map((x) => x.params as ListParams);
const watchCalls = (c: FakeClient<Thing>) => c.calls.filter((x) => x.op === "watch").map((x) => x.params as WatchParams);

describe("Informer: list and watch", () => {
  it("does no I/O until started", () => {
    const { client, informer } = setup({ names: ["a"] });
    expect(client.calls).toEqual([]);
    expect(informer.hasSynced()).toBe(false);
  });

  it("lists in pages, delivers every object as an initial add, then watches from the list's version with bookmarks", async () => {
    const { client, informer, seen, store, clock } = setup({ names: ["a", "b", "c", "d", "e"], informer: { pageSize: 2 } });
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    await clock.flush();
    expect(listCalls(client).map((p) => [p.limit, p.continue])).toEqual([[2, undefined], [2, "t1"], [2, "t2"]]);
    expect(seen).toEqual(["a@2", "b@3", "c@4", "d@5", "e@6"].map((x) => `add ${x} initial`));
    expect(watchCalls(client)).toMatchObject([{ resourceVersion: "6", allowWatchBookmarks: true }]);
    expect(informer.list().map(objectKey).sort()).toEqual(["a", "b", "c", "d", "e"]);
    expect(store.openWatches()).toBe(1);
  });

  it("turns watch events into add, update and delete calls and keeps the cache in step", async () => {
    const s = await started(setup({ names: ["a"] }));
    s.store.put(s.store.make("b", { namespace: "ns" }));
    s.store.put(s.store.make("a", { spec: { value: 2 } }));
    s.store.remove("a");
    await s.clock.flush();
    expect(s.seen).toEqual(["add b@3", "update a@2->4", "delete a@5"]);
    expect(s.informer.get("ns/b")?.metadata.name).toBe("b");
    expect(s.informer.get("a")).toBeUndefined();
    expect(s.informer.lastSyncResourceVersion()).toBe("5");
  });

  it("hands handlers and the cache what the transform made of listed and watched objects (managedFields stripped)", async () => {
    const managed: ManagedFieldsEntry[] = [{ manager: "m", operation: "Update", apiVersion: "v1", fieldsType: "FieldsV1", fieldsV1: { "f:spec": {} } }];
    const clock = new FakeClock();
    const store = new FakeStore<Thing>({ kind: "Thing", now: () => clock.now() });
    store.put(store.make("a", { metadata: { name: "a", managedFields: managed } }));
    const informer = new Informer<Thing>({ listWatcher: store.client(), clock, random: () => 0, transform: stripManagedFields });
    running.push(informer);
    const handed: Thing[] = [];
    informer.addHandlers({ onAdd: (o) => handed.push(o), onUpdate: (_a, b) => handed.push(b) });
    informer.start();
    expect(await informer.waitForSync()).toBe(true);
    store.put(store.make("a", { metadata: { name: "a", managedFields: managed }, spec: { value: 2 } }));
    store.put(store.make("b", { metadata: { name: "b", managedFields: managed } }));
    await clock.flush();
    expect(handed.map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`)).toEqual(["a@2", "a@3", "b@4"]);
    for (const o of [...handed, ...informer.list()]) expect(o.metadata).not.toHaveProperty("managedFields");
    expect(informer.get("a")?.spec?.value).toBe(2);
    // The stored objects keep theirs: the transform works on the informer's copies.
    expect(store.objects.get("a")?.metadata.managedFields).toEqual(managed);
  });

  it("moves its resource version on a bookmark without calling handlers", async () => {
    const s = await started(setup({ names: ["a"] }));
    s.store.rev = 40;
    s.store.bookmark();
    await s.clock.flush();
    expect(s.seen).toEqual([]);
    expect(s.informer.lastSyncResourceVersion()).toBe("40");
  });

  it("replays the cache as adds to handlers added after the sync", async () => {
    const s = await started(setup({ names: ["a", "b"] }));
    const late: string[] = [];
    s.informer.addHandlers({ onAdd: (o, initial) => late.push(`${o.metadata.name} ${initial}`) });
    expect(late).toEqual(["a true", "b true"]);
  });

  it("rewatches from the last version without relisting when the server ends a healthy watch", async () => {
    const s = await started(setup({ names: ["a"] }));
    s.store.put(s.store.make("b"));
    await s.clock.advance(5000);
    s.store.closeWatches();
    await s.clock.flush();
    expect(listCalls(s.client)).toHaveLength(1);
    expect(watchCalls(s.client).map((p) => p.resourceVersion)).toEqual(["2", "3"]);
    s.store.put(s.store.make("c"));
    await s.clock.flush();
    expect(s.seen).toEqual(["add b@3", "add c@4"]);
  });
});

describe("Informer: relist", () => {
  it.each([
    ["a thrown GONE error", false],
    ["an ERROR event with a 410 Status", true],
  ])("relists after %s and delivers only the difference", async (_name, goneAsEvent) => {
    const s = await started(setup({ names: ["keep", "change", "drop"], goneAsEvent }));
    s.store.stallWatches();
    s.store.put(s.store.make("change", { spec: { value: 9 } }));
    s.store.remove("drop");
    s.store.put(s.store.make("new"));
    s.store.compact();
    await s.clock.advance(60_000);
    await s.clock.advance(2000);
    expect(s.seen.sort()).toEqual(["add new@7", "delete drop@4", "update change@3->5"]);
    expect(listCalls(s.client)).toHaveLength(2);
    expect(s.informer.list().map(objectKey).sort()).toEqual(["change", "keep", "new"]);
  });

  it("relists at once when a watch that delivered events is told its version expired", async () => {
    const s = await started(setup({ names: ["a"] }));
    s.store.put(s.store.make("b"));
    await s.clock.flush();
    s.store.errorEvent(410, "too old resource version");
    await s.clock.flush();
    expect(listCalls(s.client)).toHaveLength(2);
  });

  it("waits out the backoff before relisting when a fresh watch is refused as expired", async () => {
    const s = setup({ names: ["a"] });
    s.client.failNext("watch", new PlatformError("GONE", "too old resource version"), 2);
    s.informer.start();
    await s.clock.advance(799);
    expect(listCalls(s.client)).toHaveLength(1);
    await s.clock.advance(1);
    expect(listCalls(s.client)).toHaveLength(2);
    // The second refusal comes within the reset window, so the delay doubles.
    await s.clock.advance(1599);
    expect(listCalls(s.client)).toHaveLength(2);
    await s.clock.advance(1);
    expect(listCalls(s.client)).toHaveLength(3);
    expect(s.store.openWatches()).toBe(1);
  });

  it.each([
    ["a watch error event", (st: FakeStore<Thing>) => st.errorEvent(500, "etcd unavailable")],
    ["a broken connection", (st: FakeStore<Thing>) => st.breakWatches()],
  ])("backs off and relists after %s", async (_name, fail) => {
    const s = await started(setup({ names: ["a"] }));
    fail(s.store);
    await s.clock.advance(799);
    expect(listCalls(s.client)).toHaveLength(1);
    await s.clock.advance(1);
    expect(listCalls(s.client)).toHaveLength(2);
    expect(s.store.openWatches()).toBe(1);
  });

  it("treats a watch the server closes at once without events as a failure", async () => {
    const s = await started(setup({ names: ["a"] }));
    s.store.closeWatches();
    await s.clock.flush();
    expect(listCalls(s.client)).toHaveLength(1);
    await s.clock.advance(800);
    expect(listCalls(s.client)).toHaveLength(2);
  });
});

describe("Informer: stalls and outages", () => {
  it("restarts a watch that sends nothing for stallTimeoutMs, from the last version", async () => {
    const s = await started(setup({ names: ["a"], informer: { stallTimeoutMs: 30_000 } }));
    s.store.stallWatches();
    s.store.put(s.store.make("b"));
    await s.clock.advance(29_999);
    expect(watchCalls(s.client)).toHaveLength(1);
    await s.clock.advance(1);
    expect(watchCalls(s.client).map((p) => p.resourceVersion)).toEqual(["2", "2"]);
    expect(s.seen).toEqual(["add b@3"]);
    expect(listCalls(s.client)).toHaveLength(1);
  });

  it("counts bookmarks as signs of life", async () => {
    const s = await started(setup({ names: ["a"], informer: { stallTimeoutMs: 30_000 } }));
    for (let i = 0; i < 5; i++) {
      await s.clock.advance(20_000);
      s.store.bookmark();
    }
    await s.clock.flush();
    expect(watchCalls(s.client)).toHaveLength(1);
  });

  it("gives up on a list that never answers after stallTimeoutMs and lists again", async () => {
    const s = setup({ names: ["a"], informer: { stallTimeoutMs: 10_000 } });
    s.client.hangNext("list");
    s.informer.start();
    await s.clock.advance(10_000);
    expect(s.informer.hasSynced()).toBe(false);
    await s.clock.advance(800);
    expect(s.informer.hasSynced()).toBe(true);
    expect(listCalls(s.client)).toHaveLength(2);
  });

  it("keeps retrying through an outage with capped exponential backoff, then catches up", async () => {
    const s = await started(setup({ names: ["a"], informer: { backoff: { initialMs: 1000, maxMs: 8000, jitter: 0 } } }));
    s.client.down = true;
    s.store.breakWatches();
    await s.clock.flush();
    const times: number[] = [];
    const t0 = s.clock.now();
    for (let step = 0; step < 120; step++) {
      const before = listCalls(s.client).length;
      await s.clock.advance(500);
      if (listCalls(s.client).length > before) times.push(s.clock.now() - t0);
    }
    const gaps = times.map((t, i) => t - (times[i - 1] ?? 0));
    expect(gaps.slice(0, 6)).toEqual([1000, 2000, 4000, 8000, 8000, 8000]);
    s.store.remove("a");
    s.store.put(s.store.make("b"));
    s.client.down = false;
    await s.clock.advance(8000);
    expect(s.seen.sort()).toEqual(["add b@4", "delete a@2"]);
    expect(s.store.openWatches()).toBe(1);
  });
});

describe("Informer: handlers, resync and lifecycle", () => {
  it("keeps delivering to other handlers and keeps running when one handler throws or rejects", async () => {
    const s = setup({ names: ["a"] });
    s.informer.addHandlers({ onAdd: () => { throw new Error("boom"); }, onUpdate: async () => { throw new PlatformError("INTERNAL", "async boom"); } });
    await started(s);
    s.store.put(s.store.make("b"));
    s.store.put(s.store.make("b", { spec: { value: 3 } }));
    await s.clock.flush();
    expect(s.seen).toEqual(["add b@3", "update b@3->4"]);
    expect(s.store.openWatches()).toBe(1);
  });

  it("resyncs every object as an update at the drawn period", async () => {
    const clock = new FakeClock();
    const store = new FakeStore<Thing>();
    store.put(store.make("a"));
    store.put(store.make("b"));
    const informer = new Informer<Thing>({ listWatcher: store.client(), clock, random: () => 0.5, minResyncPeriodMs: 1000 });
    running.push(informer);
    const resyncs: number[] = [];
    informer.addHandlers({ onUpdate: (o, n) => o === n && resyncs.push(clock.now()) });
    informer.start();
    await informer.waitForSync();
    const t0 = clock.now();
    await clock.advance(3000);
    expect(resyncs.map((t) => t - t0)).toEqual([1500, 1500, 3000, 3000]);
  });

  it.each([
    ["its signal is already aborted", true],
    ["it is stopped before the first list", false],
  ])("waitForSync answers false when %s", async (_name, preAborted) => {
    const s = setup({ names: ["a"] });
    s.client.down = true;
    s.informer.start();
    const controller = new AbortController();
    if (preAborted) controller.abort();
    const waiting = s.informer.waitForSync(controller.signal);
    if (!preAborted) await s.informer.stop();
    expect(await waiting).toBe(false);
  });

  it("closes its watch on stop and refuses a second start", async () => {
    const s = await started(setup({ names: ["a"] }));
    expect(() => s.informer.start()).toThrow(/already started/);
    await s.informer.stop();
    expect(s.store.openWatches()).toBe(0);
    const calls = s.client.calls.length;
    await s.clock.advance(600_000);
    expect(s.client.calls.length).toBe(calls);
  });

  it("holds nothing of a watched event once its object has left the cache, while the same watch stays open", async () => {
    const s = await started(setup({ names: ["a"] }));
    const delivered: WeakRef<Thing>[] = [];
    s.informer.addHandlers({ onUpdate: (_before, after) => void delivered.push(new WeakRef(after)) });
    for (let value = 2; value <= 30; value++) {
      s.store.put(s.store.make("a", { spec: { value } }));
      await s.clock.flush();
    }
    expect(delivered).toHaveLength(29);
    expect(s.store.openWatches()).toBe(1);
    expect(watchCalls(s.client)).toHaveLength(1);
    fullGc();
    // The cache holds the last object; every earlier one was replaced and nothing else may hold it.
    expect(delivered.slice(0, -1).filter((ref) => ref.deref() !== undefined)).toHaveLength(0);
    expect(delivered.at(-1)!.deref()).toBe(s.informer.list()[0]);
  });

  it.each([
    [{ pageSize: 0 }, "pageSize"],
    [{ stallTimeoutMs: -5 }, "stallTimeoutMs"],
    [{ minResyncPeriodMs: 1.5 }, "minResyncPeriodMs"],
  ])("refuses option %j", (bad, name) => {
    const store = new FakeStore<Thing>();
    expect(() => new Informer<Thing>({ listWatcher: store.client(), ...bad })).toThrow(new RegExp(`\`${name}\``));
  });
});

// The watch cache: one storage watch fanned out, selector transitions, bookmarks, initial events, GONE, slow readers.
import { afterEach, describe, expect, it } from "vitest";
import { isPlatformError } from "../../../src/errors.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import type { Storage } from "../../../src/apiserver/storage/types.js";
import { WatchCache, type WatchCacheOptions } from "../../../src/apiserver/watch/cache.js";
import type { CacheWatcher } from "../../../src/apiserver/watch/cache-watcher.js";
import type { CacheEvent } from "../../../src/apiserver/watch/cached-object.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { rejection } from "../storage/contract.js";

const PREFIX = "/certificates/csrs/";
const keyOf = (name: string) => `${PREFIX}${name}`;
const obj = (name: string, labels: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ metadata: { name, labels }, ...extra });
const web = (o: unknown, _key: string) => (o as { metadata: { labels: Record<string, string> } }).metadata.labels.app === "web";

/** A memory store that counts the calls the cache makes and can break its watches. */
function countingStorage() {
  const inner = new MemoryStorage({ retention: { revisions: 100_000 } });
  const calls = { watch: 0, list: 0 };
  const breakers: Array<(err: Error) => void> = [];
  const storage = new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "list") calls.list++;
        if (prop === "watch") {
          calls.watch++;
          breakers.push(args[3] as (err: Error) => void);
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as Storage;
  return { storage, calls, breakWatch: (err: Error) => breakers.at(-1)!(err) };
}

const caches: WatchCache[] = [];
afterEach(() => {
  caches.splice(0).forEach((c) => c.stop());
});

async function fixture(options: Partial<WatchCacheOptions> = {}) {
  const clock = new FakeClock();
  const store = countingStorage();
  const cache = new WatchCache({ storage: store.storage, prefix: PREFIX, clock, ...options });
  caches.push(cache);
  return { ...store, clock, cache, synced: cache.start() };
}

async function take(watcher: CacheWatcher, n: number): Promise<CacheEvent[]> {
  const out: CacheEvent[] = [];
  while (out.length < n) {
    const r = await watcher.next();
    if (r.done) throw new Error(`watch ended after ${out.length} events`);
    out.push(r.value);
  }
  return out;
}

const brief = (events: CacheEvent[]) => events.map((e) => [e.type, e.key.slice(PREFIX.length), e.revision]);

describe("watch cache", () => {
  it("serves 100 watchers from one storage watch and one list", async () => {
    const { storage, calls, cache, synced } = await fixture();
    await storage.create(keyOf("before"), obj("before"));
    await synced;
    const watchers = await Promise.all(Array.from({ length: 100 }, () => cache.watch()));
    const revs: number[] = [];
    for (let i = 0; i < 10; i++) revs.push((await storage.create(keyOf(`n${i}`), obj(`n${i}`))).modRevision);
    for (const w of watchers) expect((await take(w, 10)).map((e) => [e.type, e.revision])).toEqual(revs.map((r) => ["ADDED", r]));
    expect(calls).toEqual({ watch: 1, list: 1 });
    expect(cache.watcherCount).toBe(100);
  });

  it("decodes each stored value once for all watchers", async () => {
    let decodes = 0;
    const { storage, cache, synced } = await fixture({ decode: (t) => (decodes++, JSON.parse(t)) });
    await synced;
    const watchers = await Promise.all(Array.from({ length: 50 }, () => cache.watch({ filter: web })));
    await storage.create(keyOf("a"), obj("a", { app: "web" }));
    await storage.update(keyOf("a"), obj("a", { app: "web" }, { spec: 2 }));
    for (const w of watchers) expect((await take(w, 2)).map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect(decodes).toBe(2);
  });

  it("offers a watcher of one name only that object's events, its filter still deciding, and bookmarks; a closed one is forgotten", async () => {
    let filtered = 0;
    const { storage, cache, clock, synced } = await fixture({ bookmarkIntervalMs: 30_000 });
    await synced;
    const nameIs = (name: string) => (o: unknown) => (filtered++, (o as { metadata: { name: string } }).metadata.name === name);
    const watchers = await Promise.all(Array.from({ length: 200 }, (_, i) => cache.watch({ filter: nameIs(`n${i}`), name: `n${i}`, allowBookmarks: true })));
    // A name watcher whose other requirement (a label) the object does not meet sees nothing of it.
    const labelled = await cache.watch({ filter: (o, k) => nameIs("n7")(o) && web(o, k), name: "n7" });
    const all = await cache.watch();
    for (let i = 0; i < 20; i++) await storage.create(keyOf(`other-${i}`), obj(`other-${i}`));
    const created = await storage.create(keyOf("n7"), obj("n7", { app: "db" }));
    const updated = await storage.update(keyOf("n7"), obj("n7", { app: "web" }));
    expect(brief(await take(watchers[7]!, 2))).toEqual([["ADDED", "n7", created.modRevision], ["MODIFIED", "n7", updated.modRevision]]);
    expect(brief(await take(labelled, 1))).toEqual([["ADDED", "n7", updated.modRevision]]);
    expect(await take(all, 22)).toHaveLength(22);
    // Only the filters of n7's two named watchers ran (the create's state, the update's before and after): none for
    // the 20 other objects.
    expect(filtered).toBe(2 * 3);
    expect(watchers[8]!.buffered).toBe(0);
    await clock.advance(30_000);
    expect((await take(watchers[8]!, 1))[0]!.type).toBe("BOOKMARK");
    watchers[7]!.close();
    expect(cache.watcherCount).toBe(201);
    await storage.update(keyOf("n7"), obj("n7", { app: "web" }, { v: 2 }));
    expect(brief(await take(labelled, 1))[0]![0]).toBe("MODIFIED");
  });

  it("lists, starts and resumes a watch of one name decoding only that object, however many are stored", async () => {
    let decodes = 0;
    const { storage, cache, synced } = await fixture({ decode: (t) => (decodes++, JSON.parse(t)) });
    for (let i = 0; i < 50; i++) await storage.create(keyOf(`o${i}`), obj(`o${i}`));
    await synced;
    const only = (o: unknown) => (o as { metadata: { name: string } }).metadata.name === "o7";
    expect((await cache.list({ filter: only, name: "o7" })).items.map((i) => i.key)).toEqual([keyOf("o7")]);
    const w = await cache.watch({ filter: only, name: "o7", sendInitialEvents: true });
    expect(brief(await take(w, 1))).toEqual([["ADDED", "o7", expect.any(Number)]]);
    const from = (await storage.create(keyOf("later"), obj("later"))).modRevision - 1;
    const updated = await storage.update(keyOf("o7"), obj("o7", {}, { v: 2 }));
    const resumed = await cache.watch({ filter: only, name: "o7", fromRevision: from });
    expect(brief(await take(resumed, 1))).toEqual([["MODIFIED", "o7", updated.modRevision]]);
    // o7 before and after its update, nothing else (decoded objects are kept only while their events are in the ring).
    expect(decodes).toBeLessThanOrEqual(3);
    // Without the name the same list decodes every object.
    decodes = 0;
    await cache.list({ filter: only });
    expect(decodes).toBeGreaterThanOrEqual(50);
  });

  it("keeps a list or watch of one namespace to its keys: nothing of another is decoded, and a list of it pages and counts", async () => {
    let decodes = 0;
    const { storage, cache, synced } = await fixture({ decode: (t) => (decodes++, JSON.parse(t)) });
    const inNs = (ns: string, name: string) => `${PREFIX}${ns}/${name}`;
    for (let i = 0; i < 40; i++) await storage.create(inNs(i < 4 ? "b" : i % 2 ? "a" : "c", `o${i}`), obj(`o${i}`, { app: "web" }));
    await synced;
    const scope = `${PREFIX}b/`;
    decodes = 0;
    const page = await cache.list({ prefix: scope, limit: 3 });
    expect(page.items.map((i) => i.key)).toEqual([inNs("b", "o0"), inNs("b", "o1"), inNs("b", "o2")]);
    expect(page).toMatchObject({ more: true, remaining: 1 });
    expect((await cache.list({ prefix: scope, filter: web })).items).toHaveLength(4);
    const initial = await cache.watch({ prefix: scope, filter: web, sendInitialEvents: true });
    expect(brief(await take(initial, 4)).map(([type, name]) => `${type} ${name}`)).toEqual(["ADDED b/o0", "ADDED b/o1", "ADDED b/o2", "ADDED b/o3"]);
    const from = await storage.revision();
    const live = await cache.watch({ prefix: scope, filter: web });
    await storage.update(inNs("a", "o5"), obj("o5", { app: "web" }, { v: 2 }));
    await storage.update(inNs("b", "o1"), obj("o1", { app: "web" }, { v: 2 }));
    expect(brief(await take(live, 1))).toEqual([["MODIFIED", "b/o1", expect.any(Number)]]);
    const resumed = await cache.watch({ prefix: scope, filter: web, fromRevision: from });
    expect(brief(await take(resumed, 1))).toEqual([["MODIFIED", "b/o1", expect.any(Number)]]);
    // Only the four objects of b (and o1's new state) were decoded for the filter, none of the other namespaces'.
    expect(decodes).toBeLessThanOrEqual(6);
    await expect(cache.list({ prefix: "/other/" })).rejects.toThrow(/prefix/);
  });

  it("decodes for a filter only the objects whose text its mayMatch lets through, listing and watching", async () => {
    let decodes = 0;
    const { storage, cache, synced } = await fixture({ decode: (t) => (decodes++, JSON.parse(t)) });
    for (let i = 0; i < 30; i++) await storage.create(keyOf(`o${i}`), obj(`o${i}`, { app: i % 10 === 0 ? "web" : "db" }));
    await synced;
    const filter = Object.assign(web, { mayMatch: (text: string) => text.includes('"web"') });
    decodes = 0;
    expect((await cache.list({ filter })).items).toHaveLength(3);
    const w = await cache.watch({ filter, sendInitialEvents: true });
    expect(await take(w, 3)).toHaveLength(3);
    await storage.update(keyOf("o1"), obj("o1", { app: "db" }, { v: 2 }));
    await storage.update(keyOf("o2"), obj("o2", { app: "web" }));
    expect(brief(await take(w, 1))).toEqual([["ADDED", "o2", expect.any(Number)]]);
    // The three web objects (list, then initial events: decoded objects are kept only while their events are in the
    // ring) and o2's new state; no db object, before or after its update.
    expect(decodes).toBeLessThanOrEqual(7);
  });

  describe("selector transitions", () => {
    it.each<[string, string | undefined, string | null, string | undefined]>([
      ["an object created inside the selector is ADDED", undefined, "web", "ADDED"],
      ["an object created outside the selector is not seen", undefined, "db", undefined],
      ["an update that stays inside is MODIFIED", "web", "web", "MODIFIED"],
      ["an update that enters the selector is ADDED", "db", "web", "ADDED"],
      ["an update that leaves the selector is DELETED", "web", "db", "DELETED"],
      ["an update that stays outside is not seen", "db", "db", undefined],
      ["a delete inside the selector is DELETED", "web", null, "DELETED"],
      ["a delete outside the selector is not seen", "db", null, undefined],
    ])("%s", async (_name, before, after, expected) => {
      const { storage, cache, synced } = await fixture();
      if (before) await storage.create(keyOf("x"), obj("x", { app: before }, { v: "before" }));
      await synced;
      const w = await cache.watch({ filter: web });
      const rev = after === null
        ? (await storage.delete(keyOf("x"))).revision
        : before
          ? (await storage.update(keyOf("x"), obj("x", { app: after }, { v: "after" }))).modRevision
          : (await storage.create(keyOf("x"), obj("x", { app: after }, { v: "after" }))).modRevision;
      const sentinel = await storage.create(keyOf("sentinel"), obj("sentinel", { app: "web" }));
      const events = await take(w, expected ? 2 : 1);
      const want = expected ? [[expected, "x", rev], ["ADDED", "sentinel", sentinel.modRevision]] : [["ADDED", "sentinel", sentinel.modRevision]];
      expect(brief(events)).toEqual(want);
      if (expected === "DELETED") expect((events[0]!.object() as { v: string }).v).toBe("before");
      if (expected === "ADDED" || expected === "MODIFIED") expect((events[0]!.object() as { v: string }).v).toBe("after");
    });
  });

  it("sends BOOKMARK events on the interval with the revision the cache has seen, only to watchers that allow them", async () => {
    const { storage, cache, clock, synced } = await fixture({ bookmarkIntervalMs: 30_000 });
    await synced;
    const withBookmarks = await cache.watch({ allowBookmarks: true });
    const without = await cache.watch();
    const other = await storage.create("/other/a", "{}");
    clock.tick(29_999);
    expect(withBookmarks.buffered).toBe(0);
    clock.tick(1);
    const [mark] = await take(withBookmarks, 1);
    expect([mark!.type, mark!.revision]).toEqual(["BOOKMARK", other.modRevision]);
    clock.tick(30_000);
    expect((await take(withBookmarks, 1))[0]!.type).toBe("BOOKMARK");
    const next = await storage.create(keyOf("a"), obj("a"));
    expect(brief(await take(without, 1))).toEqual([["ADDED", "a", next.modRevision]]);
  });

  it("sends the initial state then a BOOKMARK marking its end", async () => {
    const { storage, cache, synced } = await fixture();
    await storage.create(keyOf("a"), obj("a", { app: "web" }));
    await storage.create(keyOf("b"), obj("b", { app: "db" }));
    await storage.create(keyOf("c"), obj("c", { app: "web" }));
    await synced;
    const w = await cache.watch({ sendInitialEvents: true, allowBookmarks: true, filter: web });
    const plain = await cache.watch({ sendInitialEvents: true });
    const initial = await take(w, 3);
    expect(initial.slice(0, 2).map((e) => [e.type, e.key]).sort()).toEqual([["ADDED", keyOf("a")], ["ADDED", keyOf("c")]]);
    expect(initial[2]).toMatchObject({ type: "BOOKMARK", revision: cache.revision, annotations: { "k8s.io/initial-events-end": "true" } });
    const d = await storage.create(keyOf("d"), obj("d", { app: "web" }));
    expect(brief(await take(w, 1))).toEqual([["ADDED", "d", d.modRevision]]);
    expect((await take(plain, 4)).map((e) => e.type)).toEqual(["ADDED", "ADDED", "ADDED", "ADDED"]);
  });

  it("resumes from a revision in the ring and answers GONE below it", async () => {
    const { storage, cache, synced } = await fixture({ capacity: 5 });
    await synced;
    const revs: number[] = [];
    for (let i = 0; i < 10; i++) revs.push((await storage.create(keyOf(`k${i}`), obj(`k${i}`))).modRevision);
    const err = await rejection(cache.watch({ fromRevision: revs[3]! }), "GONE");
    expect(err.message).toBe(`too old resource version: ${revs[3]} (${revs[4]})`);
    const w = await cache.watch({ fromRevision: revs[4]! });
    expect((await take(w, 5)).map((e) => e.revision)).toEqual(revs.slice(5));
  });

  it("waits for a revision it has not seen yet, and times out with TIMEOUT", async () => {
    const { storage, cache, clock, synced } = await fixture({ freshnessTimeoutMs: 2000 });
    await synced;
    const future = cache.revision + 2;
    const pending = cache.watch({ fromRevision: future });
    await storage.create("/other/a", "{}");
    await storage.create(keyOf("b"), obj("b"));
    const w = await pending;
    const c = await storage.create(keyOf("c"), obj("c"));
    expect(brief(await take(w, 1))).toEqual([["ADDED", "c", c.modRevision]]);
    const late = cache.waitUntilFresh(cache.revision + 1);
    clock.tick(2000);
    const err = await rejection(late, "TIMEOUT");
    expect(err.message).toContain("too large resource version");
  });

  it("closes a watcher whose reader falls behind, and keeps serving the others", async () => {
    const { storage, cache, synced } = await fixture({ watcherBufferSize: 10 });
    await synced;
    const slow = await cache.watch();
    const fast = await cache.watch();
    const got: CacheEvent[] = [];
    for (let i = 0; i < 11; i++) {
      await storage.create(keyOf(`k${i}`), obj(`k${i}`));
      got.push(...(await take(fast, 1)));
    }
    expect(slow.closed).toBe(true);
    expect(cache.watcherCount).toBe(1);
    const err = await rejection(() => slow.next(), "GONE");
    expect((err as { details?: Record<string, unknown> }).details?.reason).toBe("SlowConsumer");
    expect(got).toHaveLength(11);
  });

  it("lists from memory in key order with filter, limit and startAfter", async () => {
    const { storage, cache, synced } = await fixture();
    for (const [n, app] of [["d", "web"], ["a", "web"], ["c", "db"], ["b", "web"]] as const) await storage.create(keyOf(n), obj(n, { app }));
    await synced;
    const all = await cache.list();
    expect(all.items.map((i) => i.key)).toEqual(["a", "b", "c", "d"].map(keyOf));
    expect(all).toMatchObject({ revision: await storage.revision(), more: false, remaining: 0 });
    const page = await cache.list({ filter: web, limit: 2 });
    expect([page.items.map((i) => i.key), page.more]).toEqual([[keyOf("a"), keyOf("b")], true]);
    const rest = await cache.list({ filter: web, limit: 2, startAfter: keyOf("b") });
    expect([rest.items.map((i) => i.key), rest.more]).toEqual([[keyOf("d")], false]);
    expect((await cache.list({ limit: 1 })).remaining).toBe(3);
  });

  it("serves a not-older-than list once it has seen the revision, including progress from other prefixes", async () => {
    const { storage, cache, synced } = await fixture();
    await synced;
    const target = (await storage.revision()) + 1;
    const listed = cache.list({ revision: target });
    await storage.create("/other/x", "{}");
    expect((await listed).revision).toBe(target);
    await cache.waitUntilFresh(target);
  });

  it("keeps decoded objects only while their events are in the ring", async () => {
    const { storage, cache, synced } = await fixture({ capacity: 2 });
    await synced;
    await storage.create(keyOf("a"), obj("a"));
    const a = cache.get(keyOf("a"))!;
    expect(a.object()).toBe(a.object());
    await storage.create(keyOf("b"), obj("b"));
    await storage.create(keyOf("c"), obj("c"));
    expect(a.object()).not.toBe(a.object());
    expect(a.object()).toEqual({ metadata: { name: "a", labels: {} } });
  });

  it("closes every watcher with GONE and lists again when its storage watch fails", async () => {
    const { storage, calls, breakWatch, cache, clock, synced } = await fixture({ retryDelayMs: 500 });
    await synced;
    const w = await cache.watch();
    breakWatch(new Error("connection lost"));
    expect(cache.ready).toBe(false);
    await rejection(() => w.next(), "GONE");
    await storage.create(keyOf("while-down"), obj("while-down"));
    const back = cache.waitUntilFresh(0);
    clock.tick(500);
    await back;
    expect(calls).toEqual({ watch: 2, list: 2 });
    expect(cache.get(keyOf("while-down"))).toBeDefined();
  });

  it("ends a watch when its signal aborts and when the cache stops", async () => {
    const { cache, synced } = await fixture();
    await synced;
    const ac = new AbortController();
    const aborted = await cache.watch({ signal: ac.signal });
    const other = await cache.watch();
    ac.abort();
    expect(await aborted.next()).toEqual({ done: true, value: undefined });
    cache.stop();
    expect(await other.next()).toEqual({ done: true, value: undefined });
    await rejection(cache.waitUntilFresh(1), "NOT_READY");
  });

  it.each<[Partial<WatchCacheOptions>, string]>([
    [{ capacity: 0 }, "expected `capacity` to be an integer ≥ 1, got 0"],
    [{ bookmarkIntervalMs: 5 }, "expected `bookmarkIntervalMs` to be an integer ≥ 100, got 5"],
    [{ watcherBufferSize: 1.5 }, "expected `watcherBufferSize` to be an integer ≥ 1, got 1.5"],
  ])("refuses options %j", (options, message) => {
    let err: unknown;
    try {
      new WatchCache({ storage: new MemoryStorage(), prefix: PREFIX, ...options });
    } catch (e) {
      err = e;
    }
    expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
    expect((err as Error).message).toBe(message);
  });
});

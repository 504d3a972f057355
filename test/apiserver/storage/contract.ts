// The storage contract every backend must pass: CRUD and preconditions, snapshot lists, compaction, watch.
import { afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { isPlatformError, type ErrorCode } from "../../../src/errors.js";
import type { Clock } from "../../../src/time/clock.js";
import type { RetentionOptions } from "../../../src/apiserver/storage/retention.js";
import type { KeyValue, Storage, StorageEvent, Watch } from "../../../src/apiserver/storage/types.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

export interface BackendOptions {
  readonly clock?: Clock;
  readonly retention?: RetentionOptions;
}

export type BackendFactory = (options: BackendOptions) => Promise<Storage>;

/** Expects a promise (or a call) to fail with a PlatformError of this code; returns the error for more checks. */
export async function rejection(p: Promise<unknown> | (() => unknown), code: ErrorCode): Promise<Error> {
  let err: unknown;
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(isPlatformError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
  return err as Error;
}

/**
 * Records a watch; `until(n)` resolves once n events arrived, `live` once history is replayed (first progress
 * report), `failed` once the watch errored.
 */
export function recorder(storage: Storage, prefix: string, fromRevision: number) {
  const events: StorageEvent[] = [];
  const progress: number[] = [];
  let wake: () => void = () => {};
  let failWith: (err: Error) => void = () => {};
  let wentLive: () => void = () => {};
  const failed = new Promise<Error>((resolve) => (failWith = resolve));
  const live = new Promise<void>((resolve) => (wentLive = resolve));
  const onProgress = (rev: number) => {
    progress.push(rev);
    wentLive();
  };
  const watch: Watch = storage.watch(prefix, { fromRevision, onProgress }, (ev) => {
    events.push(ev);
    wake();
  }, (err) => failWith(err));
  const until = async (n: number): Promise<StorageEvent[]> => {
    while (events.length < n) await new Promise<void>((resolve) => (wake = resolve));
    return events;
  };
  return { events, progress, watch, until, live, failed };
}

const json = (v: unknown): string => JSON.stringify(v);
const summary = (kvs: readonly KeyValue[]) => kvs.map((kv) => [kv.key, kv.value]);

export function storageContract(name: string, factory: BackendFactory): void {
  describe(`${name} storage contract`, () => {
    const open: Storage[] = [];
    const make = async (options: BackendOptions = {}): Promise<Storage> => {
      const s = await factory(options);
      open.push(s);
      return s;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });

    describe("writes", () => {
      it("creates, reads, updates and deletes a key with etcd-like revisions", async () => {
        const s = await make();
        const start = await s.revision();
        const created = await s.create("/g/r/a", json({ v: 1 }));
        expect(created).toEqual({ key: "/g/r/a", value: json({ v: 1 }), createRevision: start + 1, modRevision: start + 1 });
        expect(await s.get("/g/r/a")).toEqual(created);
        const updated = await s.update("/g/r/a", json({ v: 2 }), created.modRevision);
        expect(updated).toEqual({ key: "/g/r/a", value: json({ v: 2 }), createRevision: start + 1, modRevision: start + 2 });
        const deleted = await s.delete("/g/r/a");
        expect(deleted).toEqual({ prev: updated, revision: start + 3 });
        expect(await s.get("/g/r/a")).toBeUndefined();
        expect(await s.revision()).toBe(start + 3);
      });

      it("counts one global revision across every prefix", async () => {
        const s = await make();
        const a = await s.create("/g/one/x", "{}");
        const b = await s.create("/g/two/x", "{}");
        expect(b.modRevision).toBe(a.modRevision + 1);
      });

      it.each<[string, (s: Storage) => Promise<unknown>, ErrorCode]>([
        ["refuses to create a key that exists", (s) => s.create("/k/a", "{}"), "ALREADY_EXISTS"],
        ["refuses to update a key that does not exist", (s) => s.update("/k/none", "{}"), "NOT_FOUND"],
        ["refuses to delete a key that does not exist", (s) => s.delete("/k/none"), "NOT_FOUND"],
        ["refuses an update with a stale revision", (s) => s.update("/k/a", "{}", 1), "CONFLICT"],
        ["refuses a delete with a stale revision", (s) => s.delete("/k/a", 1), "CONFLICT"],
        ["refuses a key that is not an absolute ASCII path", (s) => s.get("k/a"), "INVALID_ARGUMENT"],
        ["refuses a key with spaces", (s) => s.create("/k/a b", "{}"), "INVALID_ARGUMENT"],
        ["refuses a value that is not text", (s) => s.create("/k/b", { v: 1 } as unknown as string), "INVALID_ARGUMENT"],
        ["refuses a negative revision", (s) => s.list("/k/", { revision: -1 }), "INVALID_ARGUMENT"],
        ["refuses a list at a future revision", (s) => s.list("/k/", { revision: 10_000 }), "TIMEOUT"],
        ["refuses to compact a future revision", (s) => s.compact(10_000), "INVALID_ARGUMENT"],
      ])("%s", async (_name, call, code) => {
        const s = await make();
        await s.create("/k/a", "{}");
        await rejection(call(s), code);
      });

      it("names the expected and the actual revision in a conflict", async () => {
        const s = await make();
        const kv = await s.create("/k/a", "{}");
        await s.update("/k/a", json({ v: 2 }));
        const err = await rejection(s.update("/k/a", "{}", kv.modRevision), "CONFLICT");
        expect(err.message).toContain(`expected revision ${kv.modRevision}, actual revision ${kv.modRevision + 1}`);
      });

      it("lets exactly one of two writers holding the same revision win", async () => {
        const s = await make();
        const kv = await s.create("/k/a", json({ v: 0 }));
        const results = await Promise.allSettled([
          s.update("/k/a", json({ v: "first" }), kv.modRevision),
          s.update("/k/a", json({ v: "second" }), kv.modRevision),
          s.delete("/k/a", kv.modRevision),
        ]);
        expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected"]);
        expect((await s.get("/k/a"))?.value).toBe(json({ v: "first" }));
      });

      it("does not move the revision when a write is refused", async () => {
        const s = await make();
        await s.create("/k/a", "{}");
        const before = await s.revision();
        await rejection(s.create("/k/a", "{}"), "ALREADY_EXISTS");
        expect(await s.revision()).toBe(before);
      });

      it("answers STORAGE_UNAVAILABLE once closed", async () => {
        const s = await make();
        await s.close();
        const err = await rejection(s.get("/k/a"), "STORAGE_UNAVAILABLE");
        expect((err as { retryable?: boolean }).retryable).toBe(true);
      });
    });

    describe("list", () => {
      const seed = async (s: Storage, keys: string[]) => {
        for (const k of keys) await s.create(k, json({ k }));
      };

      it("returns the keys under a prefix in key order and nothing beside it", async () => {
        const s = await make();
        await seed(s, ["/r/b/2", "/r/a", "/r/b/1", "/r/bc/1", "/r/b", "/s/b/1"]);
        const res = await s.list("/r/b/");
        expect(res.items.map((i) => i.key)).toEqual(["/r/b/1", "/r/b/2"]);
        expect(res).toMatchObject({ more: false, revision: await s.revision() });
        expect((await s.list("")).items.map((i) => i.key)).toEqual(["/r/a", "/r/b", "/r/b/1", "/r/b/2", "/r/bc/1", "/s/b/1"]);
      });

      it("pages with limit and startAfter and counts what remains", async () => {
        const s = await make();
        await seed(s, ["/p/a", "/p/b", "/p/c", "/p/d", "/p/e"]);
        const one = await s.list("/p/", { limit: 2 });
        expect(one.items.map((i) => i.key)).toEqual(["/p/a", "/p/b"]);
        expect(one.more).toBe(true);
        expect(one.remaining ?? 3).toBe(3);
        const two = await s.list("/p/", { limit: 2, startAfter: "/p/b", revision: one.revision });
        expect(two.items.map((i) => i.key)).toEqual(["/p/c", "/p/d"]);
        const three = await s.list("/p/", { limit: 2, startAfter: "/p/d", revision: one.revision });
        expect([three.items.map((i) => i.key), three.more]).toEqual([["/p/e"], false]);
      });

      it("keeps page two on the snapshot of page one despite writes in between", async () => {
        const s = await make();
        await seed(s, ["/p/a", "/p/b", "/p/c", "/p/d"]);
        const one = await s.list("/p/", { limit: 2 });
        await s.create("/p/bb", json({ late: true }));
        await s.update("/p/c", json({ changed: true }));
        await s.delete("/p/d");
        await s.create("/p/e", "{}");
        const two = await s.list("/p/", { limit: 2, startAfter: "/p/b", revision: one.revision });
        expect(summary(two.items)).toEqual([["/p/c", json({ k: "/p/c" })], ["/p/d", json({ k: "/p/d" })]]);
        expect(two.revision).toBe(one.revision);
        expect(two.more).toBe(false);
        const latest = await s.list("/p/", { startAfter: "/p/b" });
        expect(latest.items.map((i) => i.key)).toEqual(["/p/bb", "/p/c", "/p/e"]);
      });

      it("reads the key space at any retained revision", async () => {
        const s = await make();
        const states: Array<[number, Array<[string, string]>]> = [];
        const record = async () => states.push([await s.revision(), summary((await s.list("/h/")).items) as Array<[string, string]>]);
        await s.create("/h/a", json(1));
        await record();
        await s.create("/h/b", json(2));
        await s.update("/h/a", json(3));
        await record();
        await s.delete("/h/a");
        await s.create("/h/a", json(4));
        await record();
        await s.delete("/h/b");
        for (const [revision, items] of states) expect(summary((await s.list("/h/", { revision })).items)).toEqual(items);
        const recreated = await s.get("/h/a");
        expect(recreated!.createRevision).toBe(recreated!.modRevision);
      });

      it("matches a model of the key space at every revision", async () => {
        const op = fc.record({ kind: fc.constantFrom("put", "put", "delete"), key: fc.constantFrom("/m/a", "/m/b", "/m/c", "/m/d", "/n/a") });
        await fc.assert(
          fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
            const s = await make();
            const model = new Map<string, string>();
            const snapshots: Array<[number, string[][]]> = [];
            for (const [i, o] of ops.entries()) {
              if (o.kind === "delete" && model.has(o.key)) {
                await s.delete(o.key);
                model.delete(o.key);
              } else if (o.kind === "put") {
                const value = json({ i });
                await (model.has(o.key) ? s.update(o.key, value) : s.create(o.key, value));
                model.set(o.key, value);
              }
              const expected = [...model].filter(([k]) => k.startsWith("/m/")).sort(([a], [b]) => (a < b ? -1 : 1));
              snapshots.push([await s.revision(), expected]);
            }
            for (const [revision, expected] of snapshots) {
              expect(summary((await s.list("/m/", { revision })).items)).toEqual(expected);
              const page = await s.list("/m/", { revision, limit: 1, startAfter: "/m/a" });
              const after = expected.filter(([k]) => k! > "/m/a");
              expect(summary(page.items)).toEqual(after.slice(0, 1));
              expect(page.more).toBe(after.length > 1);
            }
            await s.close();
          }),
          { numRuns: 25 },
        );
      });
    });

    describe("compaction", () => {
      it("answers GONE below the compacted revision for list and watch, and serves it from there on", async () => {
        const s = await make();
        for (let i = 0; i < 5; i++) await s.create(`/c/${i}`, json(i));
        await s.update("/c/0", json("x"));
        const at = (await s.revision()) - 2;
        const snapshot = summary((await s.list("/c/", { revision: at })).items);
        await s.compact(at);
        expect(await s.compactedRevision()).toBe(at);
        await rejection(s.list("/c/", { revision: at - 1 }), "GONE");
        expect(summary((await s.list("/c/", { revision: at })).items)).toEqual(snapshot);
        expect((await recorder(s, "/c/", at - 1).failed as { code?: string }).code).toBe("GONE");
        const resumed = recorder(s, "/c/", at);
        expect((await resumed.until(2)).map((e) => e.revision)).toEqual([at + 1, at + 2]);
        resumed.watch.cancel();
      });

      it("keeps only the configured number of revisions", async () => {
        const s = await make({ retention: { revisions: 10 } });
        for (let i = 0; i < 40; i++) await s.create(`/c/${i}`, json(i));
        const rev = await s.revision();
        expect(await s.compactedRevision()).toBe(rev - 10);
        await rejection(s.list("/c/", { revision: rev - 11 }), "GONE");
        expect((await s.list("/c/", { revision: rev - 10 })).items).toHaveLength(30);
        expect((await s.list("/c/")).items).toHaveLength(40);
      });

      it("compacts what is older than the configured age", async () => {
        const clock = new FakeClock();
        const s = await make({ clock, retention: { ageMs: 60_000, revisions: Infinity } });
        for (let i = 0; i < 5; i++) await s.create(`/c/${i}`, json(i));
        const old = await s.revision();
        clock.tick(30_000);
        await s.create("/c/5", "{}");
        expect(await s.compactedRevision()).toBe(0);
        clock.tick(31_000);
        await s.create("/c/6", "{}");
        expect(await s.compactedRevision()).toBe(old);
        expect((await s.list("/c/")).items).toHaveLength(7);
      });
    });

    describe("time to live", () => {
      /** Lets `ms` pass on the fake clock (the embedded backends' timers), and half of it on the wall (etcd's leases). */
      const pass = async (clock: FakeClock, ms: number): Promise<void> => {
        for (let t = 0; t < ms; t += 250) {
          await clock.advance(250);
          await new Promise((r) => setTimeout(r, 125));
        }
      };

      it("deletes a key once its time to live is up, as a DELETE event, unless written again (or kept by a rewrite)", async () => {
        const clock = new FakeClock(Date.now());
        const s = await make({ clock });
        const w = recorder(s, "/ttl/", 0);
        await w.live;
        await s.create("/ttl/a", json("a"), 2);
        const b = await s.create("/ttl/b", json("b"), 2);
        await s.update("/ttl/b", json("b2"), b.modRevision);
        const c = await s.create("/ttl/c", json("c"), 2);
        await s.update("/ttl/c", json("c2"), c.modRevision, 3600);
        await s.create("/ttl/d", json("d"));
        // Re-encoded values (an encryption rewrite) keep the time to live the key has, or the lack of one.
        const e = await s.create("/ttl/e", json("e"), 2);
        await s.update("/ttl/e", json("e2"), e.modRevision, "keep");
        const f = await s.create("/ttl/f", json("f"));
        await s.update("/ttl/f", json("f2"), f.modRevision, "keep");
        const written = await s.revision();
        // etcd grants at least 2 s and looks for expired leases every 500 ms: a's DELETE comes within a few seconds.
        for (let waited = 0; w.events.filter((ev) => ev.type === "DELETE").length < 2; waited += 500) {
          expect(waited, "the key outlived its time to live").toBeLessThan(20_000);
          await pass(clock, 500);
        }
        // b and c were due with a: had their later writes not kept them, they would be gone too by now.
        await pass(clock, 1500);
        const deletes = w.events.filter((ev) => ev.type === "DELETE");
        expect(deletes.map((ev) => [ev.key, ev.kv.value]).sort()).toEqual([["/ttl/a", json("a")], ["/ttl/e", json("e2")]]);
        expect(deletes.every((ev) => ev.revision > written)).toBe(true);
        expect(await s.get("/ttl/a")).toBeUndefined();
        expect((await s.list("/ttl/")).items.map((kv) => [kv.key, kv.value])).toEqual([["/ttl/b", json("b2")], ["/ttl/c", json("c2")], ["/ttl/d", json("d")], ["/ttl/f", json("f2")]]);
        w.watch.cancel();
      });

      it("refuses a time to live that is not a whole number of seconds", async () => {
        const s = await make();
        for (const ttl of [-1, 1.5, Number.NaN]) {
          const err = await rejection(s.create("/ttl/x", "{}", ttl), "INVALID_ARGUMENT");
          expect(err.message).toMatch(/^ttlSeconds must be a non-negative integer/);
        }
        const kv = await s.create("/ttl/x", "{}");
        await rejection(s.update("/ttl/x", "{}", kv.modRevision, -5), "INVALID_ARGUMENT");
        expect((await s.get("/ttl/x"))?.modRevision).toBe(kv.modRevision);
      });
    });

    describe("watch", () => {
      it("delivers puts and deletes with their previous values in revision order", async () => {
        const s = await make();
        const w = recorder(s, "/w/", 0);
        const a = await s.create("/w/a", json(1));
        const a2 = await s.update("/w/a", json(2));
        await s.create("/x/ignored", "{}");
        const del = await s.delete("/w/a");
        const events = await w.until(3);
        expect(events.map((e) => [e.type, e.key, e.revision])).toEqual([["PUT", "/w/a", a.modRevision], ["PUT", "/w/a", a2.modRevision], ["DELETE", "/w/a", del.revision]]);
        expect(events[0]!.prev).toBeUndefined();
        expect(events[1]!.prev).toEqual(a);
        expect([events[2]!.kv, events[2]!.prev]).toEqual([a2, a2]);
        w.watch.cancel();
      });

      it("resumes from a revision through history and then live writes without a gap", async () => {
        const s = await make({ retention: { revisions: 100_000 } });
        const from = await s.revision();
        for (let i = 0; i < 1200; i++) await s.create(`/w/${String(i).padStart(5, "0")}`, json(i));
        const w = recorder(s, "/w/", from);
        const writer = (async () => {
          for (let i = 1200; i < 1300; i++) {
            // Yield to the event loop so the replay and these writes interleave.
            if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
            await s.create(`/w/${String(i).padStart(5, "0")}`, json(i));
          }
        })();
        await writer;
        const events = await w.until(1300);
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 1300 }, (_, i) => from + 1 + i));
        w.watch.cancel();
      });

      it("keeps revision order when a watcher writes from inside its callback", async () => {
        const s = await make();
        const seen: number[] = [];
        const w = s.watch("/w/", { fromRevision: 0 }, (ev) => {
          seen.push(ev.revision);
          if (ev.key === "/w/a") void s.create("/w/b", "{}");
        });
        const other = recorder(s, "/w/", 0);
        await s.create("/w/a", "{}");
        const events = await other.until(2);
        expect(events.map((e) => e.key)).toEqual(["/w/a", "/w/b"]);
        // Each watcher gets its events in revision order; when one gets them beside another is not part of the contract.
        await expect.poll(() => seen.length).toBe(2);
        expect(seen).toEqual(events.map((e) => e.revision));
        w.cancel();
        other.watch.cancel();
      });

      it("stops delivering after cancel", async () => {
        const s = await make();
        const w = recorder(s, "/w/", 0);
        await s.create("/w/a", "{}");
        await w.until(1);
        w.watch.cancel();
        w.watch.cancel();
        await s.create("/w/b", "{}");
        const late = recorder(s, "/w/", (await s.revision()) - 1);
        await late.until(1);
        expect(w.events).toHaveLength(1);
        late.watch.cancel();
      });

      it("reports progress once history is replayed and then for every write outside the prefix", async () => {
        const s = await make();
        await s.create("/x/before", "{}");
        const w = recorder(s, "/w/", 1);
        await w.live;
        const start = await s.revision();
        const x = await s.create("/x/a", "{}");
        await s.create("/w/a", "{}");
        const y = await s.create("/y/a", "{}");
        await w.until(1);
        expect(w.progress).toEqual([start, x.modRevision, y.modRevision]);
        w.watch.cancel();
      });

      it("ends open watches with STORAGE_UNAVAILABLE when the storage closes", async () => {
        const s = await make();
        const w = recorder(s, "/w/", 0);
        await s.close();
        expect((await w.failed as { code?: string }).code).toBe("STORAGE_UNAVAILABLE");
      });
    });
  });
}

// The SQLite store's rows in memory (text and byte stores): reads of recently read or written keys skip SQLite, and
// never see a write the store did not commit.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { openSqliteByteStorage, openSqliteStorage, type SqliteStorageOptions } from "../../../src/apiserver/storage/sqlite.js";
import { RowCache } from "../../../src/apiserver/storage/row-cache.js";
import { rejection } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("pca-sqlite-rows-");
let n = 0;
const options = (more: Partial<SqliteStorageOptions> = {}): SqliteStorageOptions => ({ path: join(dir, `db-${++n}`, "store.db"), ...more });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every better-sqlite3 statement shares one prototype: counts the runs of the store's read of one key's row. */
let spy: MockInstance;
let rowReads = 0;
beforeEach(() => {
  const scratch = new Database(":memory:");
  const proto = Object.getPrototypeOf(scratch.prepare("SELECT 1")) as { get: (...args: unknown[]) => unknown; source?: string };
  scratch.close();
  const original = proto.get;
  rowReads = 0;
  spy = vi.spyOn(proto, "get").mockImplementation(function (this: { source: string }, ...args: unknown[]) {
    if (this.source.includes("FROM kv k JOIN log")) rowReads++;
    return original.apply(this, args);
  });
});
afterEach(() => spy.mockRestore());

describe("sqlite storage rows in memory", () => {
  it("answers an update's two reads and a get of a key it just wrote without running the row's query", async () => {
    const s = await openSqliteStorage(options());
    const created = await s.create("/r/a", '{"v":1}');
    const updated = await s.update("/r/a", '{"v":2}', created.modRevision);
    expect(await s.get("/r/a")).toMatchObject({ value: '{"v":2}', modRevision: updated.modRevision, createRevision: created.modRevision });
    expect(rowReads).toBe(0);
    await s.close();
  });

  it("reads a key from SQLite once after a restart, then from memory", async () => {
    const opts = options();
    const first = await openSqliteStorage(opts);
    await first.create("/r/a", '{"v":1}');
    await first.close();
    const s = await openSqliteStorage(opts);
    expect((await s.get("/r/a"))?.value).toBe('{"v":1}');
    expect((await s.get("/r/a"))?.value).toBe('{"v":1}');
    expect(rowReads).toBe(1);
    await s.close();
  });

  it("decides a second write of a key in the same batch against the first's uncommitted row", async () => {
    const s = await openSqliteStorage(options());
    const created = await s.create("/r/a", '{"v":1}');
    await s.get("/r/a");
    // Both join one batch: the second's precondition names the revision the first one replaced.
    const [first, second] = await Promise.allSettled([s.update("/r/a", '{"v":2}', created.modRevision), s.update("/r/a", '{"v":3}', created.modRevision)]);
    expect(first.status).toBe("fulfilled");
    expect(second).toMatchObject({ status: "rejected", reason: { code: "CONFLICT" } });
    expect((await s.get("/r/a"))?.value).toBe('{"v":2}');
    await s.close();
  });

  it("keeps serving the committed row when a write of the key fails, and forgets a deleted key", async () => {
    const s = await openSqliteStorage(options({ maxSizeBytes: 256 * 1024 }));
    const kept = await s.create("/r/a", '{"v":1}');
    await rejection(s.update("/r/a", JSON.stringify({ pad: "x".repeat(400_000) }), kept.modRevision), "STORAGE_UNAVAILABLE");
    expect(await s.get("/r/a")).toMatchObject({ value: '{"v":1}', modRevision: kept.modRevision });
    await s.delete("/r/a");
    expect(await s.get("/r/a")).toBeUndefined();
    await rejection(s.update("/r/a", '{"v":2}'), "NOT_FOUND");
    await s.close();
  });

  it("answers any sequence of writes and reads as SQLite itself does after a restart", async () => {
    const keys = ["/r/a", "/r/b", "/r/c"];
    const op = fc.oneof(
      fc.record({ kind: fc.constant("create" as const), key: fc.constantFrom(...keys), v: fc.nat(99) }),
      fc.record({ kind: fc.constant("update" as const), key: fc.constantFrom(...keys), v: fc.nat(99), stale: fc.boolean() }),
      fc.record({ kind: fc.constant("delete" as const), key: fc.constantFrom(...keys) }),
      fc.record({ kind: fc.constant("get" as const), key: fc.constantFrom(...keys) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), async (turns) => {
        const opts = options();
        const s = await openSqliteStorage(opts);
        for (const turn of turns) {
          // The operations of a turn go together, so several land in one batch.
          await Promise.allSettled(
            turn.map(async (o) => {
              if (o.kind === "create") return s.create(o.key, `{"v":${o.v}}`);
              if (o.kind === "delete") return s.delete(o.key);
              const cur = await s.get(o.key);
              if (o.kind === "get") return cur;
              return s.update(o.key, `{"v":${o.v}}`, cur && (o.stale ? cur.modRevision - 1 : cur.modRevision));
            }),
          );
        }
        // The key index (a first page's `remaining`) is built from SQLite at open, and kept by the commits until then.
        const firstPage = async (st: typeof s) => {
          const { items, remaining } = await st.list("/r/", { limit: 1 });
          return { items, remaining };
        };
        const inMemory = await Promise.all(keys.map((k) => s.get(k)));
        const page = await firstPage(s);
        await s.close();
        const reopened = await openSqliteStorage(opts);
        expect(await Promise.all(keys.map((k) => reopened.get(k)))).toEqual(inMemory);
        expect(await firstPage(reopened)).toEqual(page);
        await reopened.close();
      }),
      { numRuns: 40 },
    );
  });

  it("answers a byte store's reads from memory too, with the bytes that were committed", async () => {
    const opts = options();
    const s = await openSqliteByteStorage(opts);
    const created = await s.create("/r/a", Buffer.from([1, 2, 3]));
    await s.update("/r/a", Buffer.from([4, 5]), created.modRevision);
    expect([...(await s.get("/r/a"))!.value]).toEqual([4, 5]);
    expect(rowReads).toBe(0);
    await s.close();
    const reopened = await openSqliteByteStorage(opts);
    expect(Buffer.isBuffer((await reopened.get("/r/a"))!.value)).toBe(true);
    expect([...(await reopened.get("/r/a"))!.value]).toEqual([4, 5]);
    expect(rowReads).toBe(1);
    await reopened.close();
  });
});

describe("RowCache", () => {
  it("drops the least recently used rows past its size and never keeps a row over an eighth of it", () => {
    const rows = new RowCache<string>(80);
    const row = (key: string, value: string) => ({ key, value, createRevision: 2, modRevision: 2 });
    rows.set(row("a", "x".repeat(8)));
    rows.set(row("b", "x".repeat(8)));
    expect(rows.get("a")?.value).toHaveLength(8);
    for (const k of ["c", "d", "e", "f", "g", "h", "i"]) rows.set(row(k, "x".repeat(8)));
    expect(rows.get("a")).toBeDefined();
    expect(rows.get("b")).toBeUndefined();
    // An oversized write of a held key takes its old row out with it.
    rows.set(row("a", "x".repeat(20)));
    expect(rows.get("a")).toBeUndefined();
  });
});

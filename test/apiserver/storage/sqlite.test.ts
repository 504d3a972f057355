// Runs the storage contract against SQLite, plus what only a durable backend must do: restart, quota, one owner.
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage, type SqliteStorageOptions } from "../../../src/apiserver/storage/sqlite.js";
import { isPlatformError } from "../../../src/errors.js";
import { storageContract, rejection, recorder } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

const dir = tempDir("pca-sqlite-");
let n = 0;
const dbPath = () => join(dir, `db-${++n}`, "store.db");
const open = (options: Partial<SqliteStorageOptions> = {}) => openSqliteStorage({ path: dbPath(), ...options });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

storageContract("sqlite", (options) => open(options));

describe("sqlite storage", () => {
  it("keeps data, history and the revision across a restart and keeps counting upward", async () => {
    const path = dbPath();
    const first = await openSqliteStorage({ path });
    await first.create("/r/a", JSON.stringify({ v: 1 }));
    const b = await first.create("/r/b", "{}");
    await first.update("/r/a", JSON.stringify({ v: 2 }));
    const before = await first.revision();
    await first.close();
    const second = await openSqliteStorage({ path });
    expect(await second.revision()).toBe(before);
    expect((await second.get("/r/a"))?.value).toBe(JSON.stringify({ v: 2 }));
    expect((await second.list("/r/", { revision: b.modRevision })).items.map((i) => i.value)).toEqual([JSON.stringify({ v: 1 }), "{}"]);
    const w = recorder(second, "/r/", b.modRevision);
    const c = await second.create("/r/c", "{}");
    expect(c.modRevision).toBe(before + 1);
    expect((await w.until(2)).map((e) => [e.key, e.revision])).toEqual([["/r/a", before], ["/r/c", before + 1]]);
    w.watch.cancel();
    await second.close();
  });

  it("deletes at its first sweep a key whose time to live ran out while the store was closed, and keeps the others' times", async () => {
    const path = dbPath();
    const clock = new FakeClock();
    const first = await openSqliteStorage({ path, clock });
    await first.create("/e/short", "{}", 60);
    await first.create("/e/long", "{}", 3600);
    await first.create("/e/none", "{}");
    const kept = await first.create("/e/cleared", "{}", 60);
    await first.update("/e/cleared", "{}", kept.modRevision);
    await first.close();
    clock.tick(120_000);
    const second = await openSqliteStorage({ path, clock });
    const w = recorder(second, "/e/", 0);
    await w.live;
    await clock.advance(500);
    expect((await w.until(1)).map((e) => [e.type, e.key])).toEqual([["DELETE", "/e/short"]]);
    expect((await second.list("/e/")).items.map((kv) => kv.key)).toEqual(["/e/cleared", "/e/long", "/e/none"]);
    await clock.advance(3_600_000);
    expect((await w.until(2)).map((e) => [e.type, e.key])).toEqual([["DELETE", "/e/short"], ["DELETE", "/e/long"]]);
    expect((await second.list("/e/")).items.map((kv) => kv.key)).toEqual(["/e/cleared", "/e/none"]);
    w.watch.cancel();
    await second.close();
  });

  it("counts what remains after a page from the keys it held at open and the writes it committed since", async () => {
    const path = dbPath();
    const first = await openSqliteStorage({ path });
    await Promise.all(Array.from({ length: 30 }, (_, i) => first.create(`/c/${String(i).padStart(2, "0")}`, "{}")));
    await first.create("/d/other", "{}");
    await first.close();
    const second = await openSqliteStorage({ path });
    // Refused and failed writes in the same batch as accepted ones must not count.
    const outcomes = await Promise.allSettled([second.create("/c/05", "{}"), second.delete("/c/10"), second.create("/c/30", "{}"), second.delete("/c/99")]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "fulfilled", "fulfilled", "rejected"]);
    const page = await second.list("/c/", { limit: 4, startAfter: "/c/03" });
    expect(page.items.map((i) => i.key)).toEqual(["/c/04", "/c/05", "/c/06", "/c/07"]);
    // /c/08 … /c/30 without /c/10.
    expect(page.remaining).toBe(22);
    expect((await second.list("/c/", { limit: 1 })).remaining).toBe(29);
    await second.close();
  });

  it("keeps the compacted revision across a restart", async () => {
    const path = dbPath();
    const first = await openSqliteStorage({ path });
    for (let i = 0; i < 5; i++) await first.create(`/r/${i}`, "{}");
    await first.compact(4);
    await first.close();
    const second = await openSqliteStorage({ path });
    expect(await second.compactedRevision()).toBe(4);
    await rejection(second.list("/r/", { revision: 3 }), "GONE");
    await second.close();
  });

  it("skips revisions and compacts after them, for a store opened later too, without touching an object", async () => {
    const path = dbPath();
    const first = await openSqliteStorage({ path });
    const a = await first.create("/r/a", "{}");
    await first.update("/r/a", JSON.stringify({ v: 2 }));
    await first.create("/r/b", "{}");
    await first.delete("/r/b");
    const kept = await first.get("/r/a");
    const from = await first.revision();
    expect(await first.fenceRevision(1000)).toEqual({ from, to: from + 1001 });
    await first.close();
    const second = await openSqliteStorage({ path });
    const to = from + 1001;
    expect([await second.revision(), await second.compactedRevision()]).toEqual([to, to]);
    expect(await second.get("/r/a")).toEqual(kept);
    // Every earlier revision, those before the fence and the skipped ones, is gone for lists and watches.
    for (const revision of [a.modRevision, from, from + 1000]) {
      await rejection(second.list("/r/", { revision }), "GONE");
      const err = await recorder(second, "/r/", revision).failed;
      expect(isPlatformError(err, "GONE"), String(err)).toBe(true);
    }
    expect((await second.list("/r/", { revision: to })).items).toEqual([kept]);
    const w = recorder(second, "/r/", to);
    expect((await second.create("/r/c", "{}")).modRevision).toBe(to + 1);
    expect((await w.until(1)).map((e) => [e.key, e.revision])).toEqual([["/r/c", to + 1]]);
    w.watch.cancel();
    await rejection(second.fenceRevision(0), "INVALID_OPTION");
    await rejection(second.fenceRevision(Number.MAX_SAFE_INTEGER), "INVALID_OPTION");
    await second.close();
    // The history before the fence was compacted too: one row per live key, no superseded value, no tombstone.
    const db = new Database(path, { readonly: true });
    try {
      expect(db.prepare("SELECT key, rev FROM log ORDER BY rev").all()).toEqual([{ key: "/r/a", rev: kept!.modRevision }, { key: "/r/c", rev: to + 1 }]);
    } finally {
      db.close();
    }
  });

  it("leaves no trace of deleted keys in the file once their deletion is compacted", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    for (let i = 0; i < 50; i++) await s.create(`/d/${i}`, JSON.stringify({ i }));
    for (let i = 0; i < 50; i++) await s.update(`/d/${i}`, JSON.stringify({ i, again: true }));
    for (let i = 0; i < 40; i++) await s.delete(`/d/${i}`);
    await s.compact(await s.revision());
    await s.close();
    const db = new Database(path, { readonly: true });
    try {
      expect(db.prepare("SELECT COUNT(*) AS n FROM log").get()).toEqual({ n: 10 });
    } finally {
      db.close();
    }
  });

  it("creates the database file readable by its owner only", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    await s.create("/r/a", "{}");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(path, "..")).mode & 0o777).toBe(0o700);
    await s.close();
  });

  it("lets one process own the database and tells a second opener it is unavailable", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    const err = await rejection(openSqliteStorage({ path }), "STORAGE_UNAVAILABLE");
    expect(err.message).toContain("SQLITE_BUSY");
    await s.close();
    const again = await openSqliteStorage({ path });
    await again.close();
  });

  it("refuses a file that is not a database as unavailable and not worth retrying", async () => {
    const path = dbPath();
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, "this is not a database file, it is plain text ".repeat(100));
    const err = await rejection(openSqliteStorage({ path }), "STORAGE_UNAVAILABLE");
    expect(err).toMatchObject({ retryable: false, details: { sqliteCode: "SQLITE_NOTADB" } });
  });

  it("fails a write past the quota with a retryable STORAGE_UNAVAILABLE and keeps serving reads", async () => {
    const s = await open({ maxSizeBytes: 256 * 1024 });
    const big = JSON.stringify({ pad: "x".repeat(4000) });
    let failure: Error | undefined;
    let written = 0;
    for (let i = 0; i < 200 && !failure; i++) {
      const revision = await s.revision();
      try {
        await s.create(`/q/${i}`, big);
        written++;
      } catch (err) {
        failure = err as Error;
        expect(await s.revision()).toBe(revision);
      }
    }
    expect(failure).toMatchObject({ code: "STORAGE_UNAVAILABLE", retryable: true });
    expect(failure!.message).toContain("SQLITE_FULL");
    expect((await s.list("/q/")).items).toHaveLength(written);
    await s.delete("/q/0");
    await s.close();
  });

  it.each([
    [{ path: "" }, "expected `path` to be a database file path, got \"\""],
    [{ path: "/tmp/x.db", cacheSizeBytes: 10 }, "expected `cacheSizeBytes` ≥ 65536, got 10"],
    [{ path: "/tmp/x.db", maxSizeBytes: 1.5 }, "expected `maxSizeBytes` ≥ 65536, got 1.5"],
    [{ path: "/tmp/x.db", retention: { ageMs: 0 } }, "expected `retention.ageMs` ≥ 1000, got 0"],
  ])("refuses options %j", async (options, message) => {
    const err = await rejection(openSqliteStorage(options), "INVALID_OPTION");
    expect(err.message).toBe(message);
  });
});

// Group commit of the SQLite backend: writes issued together share one transaction yet keep per-write revisions,
// preconditions, failures and watch order.
import { fdatasync, fstatSync, readdirSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { isPlatformError } from "../../../src/errors.js";
import { openSqliteStorage, type SqliteStorageOptions } from "../../../src/apiserver/storage/sqlite.js";
import type { SqliteStorage } from "../../../src/apiserver/storage/sqlite-storage.js";
import { sqliteMetrics } from "../../../src/apiserver/storage/sqlite-metrics.js";
import { sample } from "../../fixtures/metrics-text.js";
import { recorder } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("pca-group-");
let n = 0;
const dbPath = () => join(dir, `db-${++n}`, "store.db");
const open = (options: Partial<SqliteStorageOptions> = {}) => openSqliteStorage({ path: dbPath(), ...options });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Op = (s: SqliteStorage) => Promise<unknown>;

/** Issues every operation in the same event-loop turn (one batch) and reports each outcome: a revision or an error code. */
async function batch(s: SqliteStorage, ops: readonly Op[]): Promise<Array<number | string>> {
  const settled = await Promise.allSettled(ops.map((op) => op(s)));
  return settled.map((r) => {
    if (r.status === "rejected") return isPlatformError(r.reason) ? r.reason.code : `not typed: ${String(r.reason)}`;
    const v = r.value as { modRevision?: number; revision?: number };
    return v.modRevision ?? v.revision ?? -1;
  });
}

/** A log flush that waits to be released: writes stay unacknowledged until then. `releaseAll` lets every flush through. */
function heldFlushes() {
  const held: Array<() => void> = [];
  let open = false;
  let fail: Error | undefined;
  return {
    held,
    syncLog(fd: number, done: (err: Error | null) => void): void {
      const run = () => (fail ? done(fail) : fdatasync(fd, done));
      if (open) run();
      else held.push(run);
    },
    releaseAll(): void {
      open = true;
      for (const run of held.splice(0)) run();
    },
    failAll(err: Error): void {
      fail = err;
      this.releaseAll();
    },
  };
}

/**
 * Log flushes run at once; flushes of the database file `path` (found by inode: the storage flushes it through its
 * own descriptor) wait in `held`, or fail with `fail`.
 */
function heldDatabaseFlushes(path: string) {
  const held: Array<() => void> = [];
  let fail: Error | undefined;
  return {
    held,
    syncLog(fd: number, done: (err: Error | null) => void): void {
      if (fstatSync(fd).ino !== statSync(path).ino) return fdatasync(fd, done);
      held.push(() => (fail ? done(fail) : fdatasync(fd, done)));
    },
    failWith(err: Error): void {
      fail = err;
    },
  };
}

/**
 * A store whose database flushes are held, after 1,000 acknowledged writes of 1 KB under `prefix` (the checkpoint's
 * interval, 100 at a time); `before`: the database file's size before them.
 */
async function openAtCheckpoint(prefix: string, options: Partial<SqliteStorageOptions> = {}) {
  const path = dbPath();
  const flushes = heldDatabaseFlushes(path);
  const s = await openSqliteStorage({ path, syncLog: flushes.syncLog, ...options });
  const before = statSync(path).size;
  for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => s.create(`${prefix}${i}-${j}`, JSON.stringify({ pad: "p".repeat(1000) }))));
  return { path, flushes, s, before };
}

/** A logger (warnings and above) whose lines the test reads back. */
function capturedLog() {
  let text = "";
  const destination = new Writable({ write(chunk, _encoding, done) { text += String(chunk); done(); } });
  return { logger: createLogger({ level: "warn", destination }), text: () => text };
}

const settledYet = async (p: Promise<unknown>): Promise<boolean> => {
  let settled = false;
  p.then(() => (settled = true), () => (settled = true));
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return settled;
};

const create = (key: string, value = "{}"): Op => (s) => s.create(key, value);
const update = (key: string, value: string, expected?: number): Op => (s) => s.update(key, value, expected);
const remove = (key: string, expected?: number): Op => (s) => s.delete(key, expected);

describe("sqlite group commit", () => {
  it("lets the first of two creates of one key in a batch win and fails the second with ALREADY_EXISTS", async () => {
    const s = await open();
    const r = await s.revision();
    expect(await batch(s, [create("/g/a", '{"first":true}'), create("/g/a", '{"second":true}'), create("/g/b")])).toEqual([r + 1, "ALREADY_EXISTS", r + 2]);
    expect((await s.get("/g/a"))?.value).toBe('{"first":true}');
    expect(await s.revision()).toBe(r + 2);
    await s.close();
  });

  it("applies an update and a delete issued in the same batch as the create they depend on", async () => {
    const s = await open();
    const r = await s.revision();
    const outcome = await batch(s, [create("/g/k", '{"v":1}'), update("/g/k", '{"v":2}', r + 1), create("/g/gone"), remove("/g/gone", r + 3)]);
    expect(outcome).toEqual([r + 1, r + 2, r + 3, r + 4]);
    expect(await s.get("/g/k")).toEqual({ key: "/g/k", value: '{"v":2}', createRevision: r + 1, modRevision: r + 2 });
    expect(await s.get("/g/gone")).toBeUndefined();
    await s.close();
  });

  it("checks preconditions in order against the earlier writes of the batch", async () => {
    const s = await open();
    const base = (await s.create("/g/c", '{"v":0}')).modRevision;
    const outcome = await batch(s, [
      update("/g/c", '{"v":1}', base),
      update("/g/c", '{"v":"stale"}', base),
      remove("/g/c", base + 1),
      update("/g/c", '{"v":"late"}'),
      remove("/g/missing"),
    ]);
    expect(outcome).toEqual([base + 1, "CONFLICT", base + 2, "NOT_FOUND", "NOT_FOUND"]);
    expect(await s.get("/g/c")).toBeUndefined();
    expect(await s.revision()).toBe(base + 2);
    await s.close();
  });

  it("fails a write past the quota alone and commits the rest of its batch", async () => {
    const s = await open({ maxSizeBytes: 256 * 1024 });
    const r = await s.revision();
    const huge = JSON.stringify({ pad: "x".repeat(400 * 1024) });
    const outcome = await batch(s, [create("/g/small-1"), create("/g/huge", huge), create("/g/small-2")]);
    expect(outcome).toEqual([r + 1, "STORAGE_UNAVAILABLE", r + 2]);
    expect((await s.list("/g/")).items.map((kv) => [kv.key, kv.modRevision])).toEqual([["/g/small-1", r + 1], ["/g/small-2", r + 2]]);
    await s.close();
  });

  it("delivers the events of a batch to watchers in revision order, matching the acknowledged revisions", async () => {
    const s = await open();
    const w = recorder(s, "/w/", await s.revision());
    await w.live;
    const keys = Array.from({ length: 40 }, (_, i) => `/w/${String(39 - i).padStart(2, "0")}`);
    const ops: Op[] = [...keys.map((k) => create(k)), ...keys.slice(0, 10).map((k) => remove(k))];
    const acked = await batch(s, ops);
    const events = await w.until(ops.length);
    expect(events.map((e) => e.revision)).toEqual([...acked].sort((a, b) => Number(a) - Number(b)));
    expect(events.map((e) => `${e.type} ${e.key}`)).toEqual([...keys.map((k) => `PUT ${k}`), ...keys.slice(0, 10).map((k) => `DELETE ${k}`)]);
    w.watch.cancel();
    await s.close();
  });

  it("commits at most 256 writes per transaction, each with its own consecutive revision, and keeps them across a restart", async () => {
    const path = dbPath();
    const flushes = heldFlushes();
    const s = await openSqliteStorage({ path, syncLog: flushes.syncLog });
    const r = await s.revision();
    const count = 700;
    const writes = Array.from({ length: count }, (_, i) => s.create(`/many/${i}`, JSON.stringify({ i })));
    // One check phase commits one batch: the first 256 writes, then the next 256 in the following phase.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await s.revision()).toBe(r + 256);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await s.revision()).toBe(r + 512);
    flushes.releaseAll();
    const acked = (await Promise.all(writes)).map((kv) => kv.modRevision);
    expect(acked).toEqual(Array.from({ length: count }, (_, i) => r + 1 + i));
    await s.close();
    const again = await openSqliteStorage({ path });
    expect(await again.revision()).toBe(r + count);
    expect((await again.list("/many/")).items).toHaveLength(count);
    await again.close();
  });

  it("commits the writes queued during a flush together once it ends, however many turns they came in", async () => {
    const flushes = heldFlushes();
    const s = await open({ syncLog: flushes.syncLog });
    const first = s.create("/t/0", "{}");
    expect(await settledYet(first)).toBe(false);
    const r = await s.revision();
    const later: Promise<{ modRevision: number }>[] = [];
    for (let i = 1; i <= 5; i++) {
      later.push(s.create(`/t/${i}`, "{}"));
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Five turns of the event loop and nothing committed: the flush is still out.
    expect(await s.revision()).toBe(r);
    flushes.held.shift()!();
    await first;
    // All five committed at the flush's end, and one flush covers them.
    expect(await s.revision()).toBe(r + 5);
    expect(flushes.held).toHaveLength(1);
    flushes.releaseAll();
    expect((await Promise.all(later)).map((kv) => kv.modRevision)).toEqual([r + 1, r + 2, r + 3, r + 4, r + 5]);
    await s.close();
  });

  it("finds the keys written before a restart (creates of them refused, updates applied)", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    const kv = await s.create("/r/a", "{}");
    await s.close();
    const again = await openSqliteStorage({ path });
    expect(await batch(again, [create("/r/a"), (st) => st.update("/r/a", '{"v":1}', kv.modRevision)])).toEqual(["ALREADY_EXISTS", kv.modRevision + 1]);
    expect((await again.get("/r/a"))?.value).toBe('{"v":1}');
    await again.close();
  });

  it("commits and acknowledges writes still queued when the store closes", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    const pending = [s.create("/late/a", "{}"), s.create("/late/b", "{}")];
    await s.close();
    const acked = await Promise.all(pending);
    const again = await openSqliteStorage({ path });
    expect((await again.list("/late/")).items.map((kv) => kv.modRevision)).toEqual(acked.map((kv) => kv.modRevision));
    await again.close();
  });

  it("acknowledges a write and publishes its watch event only once the log flush is done", async () => {
    const flushes = heldFlushes();
    const s = await open({ syncLog: flushes.syncLog });
    const w = recorder(s, "/f/", await s.revision());
    await w.live;
    const write = s.create("/f/a", "{}");
    expect(await settledYet(write)).toBe(false);
    expect(flushes.held).toHaveLength(1);
    expect(w.events).toEqual([]);
    // Writes queued while a flush is out wait for its end, then share one commit and the next flush.
    const before = await s.revision();
    const more = [s.create("/f/b", "{}"), s.create("/f/c", "{}")];
    expect(await settledYet(Promise.race(more))).toBe(false);
    expect(flushes.held).toHaveLength(1);
    expect(await s.revision()).toBe(before);
    flushes.held.shift()!();
    const first = await write;
    expect(w.events.map((e) => e.revision)).toEqual([first.modRevision]);
    expect(await settledYet(Promise.race(more))).toBe(false);
    expect(flushes.held).toHaveLength(1);
    flushes.releaseAll();
    expect((await Promise.all(more)).map((kv) => kv.modRevision)).toEqual([first.modRevision + 1, first.modRevision + 2]);
    expect((await w.until(3)).map((e) => e.key)).toEqual(["/f/a", "/f/b", "/f/c"]);
    w.watch.cancel();
    await s.close();
  });

  it("fails the writes of a failed flush and every later write with STORAGE_UNAVAILABLE, and still closes", async () => {
    const path = dbPath();
    const flushes = heldFlushes();
    const s = await openSqliteStorage({ path, syncLog: flushes.syncLog });
    const r = await s.revision();
    const outcome = batch(s, [create("/x/a"), create("/x/a"), create("/x/b")]);
    expect(await settledYet(outcome)).toBe(false);
    flushes.failAll(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    expect(await outcome).toEqual(["STORAGE_UNAVAILABLE", "STORAGE_UNAVAILABLE", "STORAGE_UNAVAILABLE"]);
    const later = await s.create("/x/c", "{}").catch((err: unknown) => err);
    expect(isPlatformError(later, "STORAGE_UNAVAILABLE")).toBe(true);
    expect((later as Error).message).toMatch(/could not be flushed to disk: EIO.*until the server restarts/);
    expect((later as { retryable?: boolean }).retryable).toBe(false);
    // Health checks ask for the revision: the server reports its storage down until restarted.
    await expect(s.revision()).rejects.toThrow(/could not be flushed/);
    await s.close();
    // A restart opens what reached the disk (here, in the absence of a real I/O error, the whole batch).
    const again = await openSqliteStorage({ path });
    expect(await again.revision()).toBe(r + 2);
    await again.close();
  });

  it("acknowledges the writes of a flush still running when the store closes, and closes cleanly after it", async () => {
    const path = dbPath();
    const flushes = heldFlushes();
    const s = await openSqliteStorage({ path, syncLog: flushes.syncLog });
    const write = s.create("/c/a", "{}");
    expect(await settledYet(write)).toBe(false);
    await s.close();
    const kv = await write;
    // The flush the thread pool was running finishes after the close: nothing is acknowledged twice, nothing throws.
    flushes.releaseAll();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const again = await openSqliteStorage({ path });
    expect((await again.get("/c/a"))?.modRevision).toBe(kv.modRevision);
    await again.close();
  });

  it("flushes a checkpoint's copy on the thread pool and commits no write until it is on disk", async () => {
    const { path, flushes, s, before } = await openAtCheckpoint("/hold/");
    // The 1,000th acknowledgement ran the checkpoint: its copy is in the database file, its flush is out.
    expect(flushes.held).toHaveLength(1);
    expect(statSync(path).size).toBeGreaterThan(before + 500_000);
    const r = await s.revision();
    const later = [s.create("/hold/late-a", "{}"), s.create("/hold/late-b", "{}")];
    expect(await settledYet(Promise.race(later))).toBe(false);
    // Not even committed: the next write transaction may restart the log over the frames just copied.
    expect(await s.revision()).toBe(r);
    flushes.held.shift()!();
    expect((await Promise.all(later)).map((kv) => kv.modRevision)).toEqual([r + 1, r + 2]);
    await s.close();
    const again = await openSqliteStorage({ path });
    expect((await again.list("/hold/")).items).toHaveLength(1002);
    await again.close();
  });

  it("refuses writes with STORAGE_UNAVAILABLE once a checkpoint's copy could not be flushed", async () => {
    const log = capturedLog();
    const { flushes, s } = await openAtCheckpoint("/eio/", { logger: log.logger });
    const waiting = s.create("/eio/late", "{}").catch((err: unknown) => err);
    flushes.failWith(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    flushes.held.shift()!();
    const err = await waiting;
    expect(isPlatformError(err, "STORAGE_UNAVAILABLE")).toBe(true);
    expect((err as Error).message).toMatch(/the database file could not be flushed to disk: EIO.*until the server restarts/);
    await expect(s.revision()).rejects.toThrow(/could not be flushed/);
    expect(log.text()).toContain("database file flush failed; storage refuses writes until restarted");
    await s.close();
  });

  it("on close, flushes a checkpoint's copy still out and commits the writes waiting for it", async () => {
    const { path, flushes, s } = await openAtCheckpoint("/shut/");
    expect(flushes.held).toHaveLength(1);
    const waiting = s.create("/shut/late", "{}");
    await s.close();
    const kv = await waiting;
    // The pool's flush ends after the close: it only closes its descriptor.
    flushes.held.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const again = await openSqliteStorage({ path });
    expect((await again.get("/shut/late"))?.modRevision).toBe(kv.modRevision);
    expect((await again.list("/shut/")).items).toHaveLength(1001);
    await again.close();
  });

  it("follows a replaced log file at the next checkpoint, with one descriptor of the database file as before", async () => {
    const log = capturedLog();
    const path = dbPath();
    const s = await openSqliteStorage({ path, logger: log.logger });
    const real = realpathSync(path);
    const open = (file: string) => readdirSync("/proc/self/fd").filter((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`) === file; } catch { return false; } }).length;
    const before = { db: open(real), wal: open(`${real}-wal`) };
    renameSync(`${path}-wal`, `${path}-wal.old`);
    writeFileSync(`${path}-wal`, "");
    for (let i = 0; i < 11; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => s.create(`/moved/${i}-${j}`, "{}")));
    expect(log.text()).toContain("write-ahead log file replaced");
    // The new log is opened; the old one's descriptor closed (SQLite keeps its own); the database file's unchanged.
    expect({ db: open(real), wal: open(`${real}-wal`) }).toEqual({ db: before.db, wal: 1 });
    await s.close();
  });

  it("checkpoints the log into the database file as writes accumulate, not only at close", async () => {
    const path = dbPath();
    const s = await openSqliteStorage({ path });
    const before = statSync(path).size;
    const pad = "p".repeat(2000);
    for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 500 }, (_, j) => s.create(`/ck/${i}-${j}`, JSON.stringify({ pad }))));
    // 1,500 writes of 2 KB: at least one checkpoint has copied pages into the database file itself.
    expect(statSync(path).size).toBeGreaterThan(before + 1_000_000);
    await s.close();
  });
});

describe("sqlite group commit metrics", () => {
  /** The process's flush and commit histograms as a scrape reads them: count and sum per series, and one bucket's count. */
  async function read(): Promise<{ series(name: string, labels?: string): { count: number; sum: number }; bucket(name: string, le: string, labels?: string): number }> {
    const registry = new Registry();
    sqliteMetrics.register(registry);
    const text = await registry.metrics();
    const value = (series: string) => sample(text, series);
    const braces = (labels: string) => (labels ? `{${labels}}` : "");
    return {
      series: (name, labels = "") => ({ count: value(`${name}_count${braces(labels)}`), sum: value(`${name}_sum${braces(labels)}`) }),
      bucket: (name, le, labels = "") => value(`${name}_bucket{le="${le}"${labels ? `,${labels}` : ""}}`),
    };
  }

  it("times each log flush, slow ones in the buckets they took, and counts each commit's writes", async () => {
    const before = await read();
    // A disk that takes 20 ms to flush the log: the eight creates of one turn are one commit and one flush.
    const s = await open({ syncLog: (fd, done) => setTimeout(() => fdatasync(fd, done), 20) });
    const settled = await batch(s, Array.from({ length: 8 }, (_, i) => create(`/m/${i}`)));
    expect(settled.every((r) => typeof r === "number")).toBe(true);
    const after = await read();
    const log = 'file="log"';
    const flushes = after.series("platform_ca_storage_flush_duration_seconds", log).count - before.series("platform_ca_storage_flush_duration_seconds", log).count;
    expect(flushes).toBeGreaterThanOrEqual(1);
    const seconds = after.series("platform_ca_storage_flush_duration_seconds", log).sum - before.series("platform_ca_storage_flush_duration_seconds", log).sum;
    expect(seconds).toBeGreaterThanOrEqual(0.019 * flushes);
    // None of them under 12.8 ms.
    expect(after.bucket("platform_ca_storage_flush_duration_seconds", "0.0128", log)).toBe(before.bucket("platform_ca_storage_flush_duration_seconds", "0.0128", log));
    const commits = { count: after.series("platform_ca_storage_commit_writes").count - before.series("platform_ca_storage_commit_writes").count, sum: after.series("platform_ca_storage_commit_writes").sum - before.series("platform_ca_storage_commit_writes").sum };
    expect(commits.sum).toBe(8);
    expect(commits.count).toBeLessThanOrEqual(2);
    // A batch of eight: counted in the bucket of 8, not of 4.
    expect(after.bucket("platform_ca_storage_commit_writes", "8") - before.bucket("platform_ca_storage_commit_writes", "8")).toBeGreaterThanOrEqual(1);
    await s.close();
  });

  it("times the database file's flush after a checkpoint apart from the log's", async () => {
    const before = await read();
    const s = await open();
    for (let i = 0; i < 11; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => s.create(`/cp/${i}-${j}`, JSON.stringify({ pad: "p".repeat(1000) }))));
    const after = await read();
    const db = 'file="database"';
    expect(after.series("platform_ca_storage_flush_duration_seconds", db).count - before.series("platform_ca_storage_flush_duration_seconds", db).count).toBeGreaterThanOrEqual(1);
    expect(after.series("platform_ca_storage_commit_writes").sum - before.series("platform_ca_storage_commit_writes").sum).toBe(1100);
    await s.close();
  });
});

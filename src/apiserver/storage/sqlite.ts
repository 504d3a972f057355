// Durable embedded storage on SQLite (WAL, synchronous=FULL) with group commit: a write resolves only after the
// fsynced commit of the batch it joined.
import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { PlatformError, invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { KeyValue, ListResult, StorageEvent } from "./types.js";
import { systemClock, type Clock } from "./clock.js";
import { BaseStorage, type ListRange, type WriteDecision } from "./base-storage.js";
import { ageCheckInterval, resolveRetention, revisionTarget, type Retention, type RetentionOptions } from "./retention.js";
import { SCHEMA, prepareStatements, type KvRow, type LogRow, type Statements } from "./sqlite-schema.js";

export interface SqliteStorageOptions {
  /** Database file; its directory is created (0700) and a new file is created 0600. */
  readonly path: string;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** History kept for list/watch at older revisions; default the last 100,000 revisions and at most 10 minutes. */
  readonly retention?: RetentionOptions;
  /** SQLite page cache; default 16 MiB. */
  readonly cacheSizeBytes?: number;
  /** Quota for the database file; writes past it fail with STORAGE_UNAVAILABLE. Default: none. */
  readonly maxSizeBytes?: number;
}

const DEFAULT_RETENTION: Retention = { revisions: 100_000, ageMs: 10 * 60_000 };
/** Revisions compacted per transaction, so one compaction pass never holds the writer for long. */
const COMPACT_CHUNK = 2000;
/** At most this many revisions are compacted after one commit; a large backlog is worked off over later commits. */
const COMPACT_PER_WRITE = 5 * COMPACT_CHUNK;
/** At most this many writes share one transaction, so one commit never holds the event loop for long. */
const MAX_BATCH = 256;
/** SQLite result codes that no retry will fix. */
const PERMANENT = new Set(["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_CANTOPEN"]);

export async function openSqliteStorage(options: SqliteStorageOptions): Promise<SqliteStorage> {
  if (typeof options?.path !== "string" || options.path === "" || options.path === ":memory:") {
    throw invalidOption("path", "to be a database file path", options?.path);
  }
  const cacheSizeBytes = options.cacheSizeBytes ?? 16 * 1024 * 1024;
  if (!Number.isSafeInteger(cacheSizeBytes) || cacheSizeBytes < 65_536) throw invalidOption("cacheSizeBytes", "≥ 65536", cacheSizeBytes);
  if (options.maxSizeBytes !== undefined && (!Number.isSafeInteger(options.maxSizeBytes) || options.maxSizeBytes < 65_536)) {
    throw invalidOption("maxSizeBytes", "≥ 65536", options.maxSizeBytes);
  }
  const retention = resolveRetention(options.retention, DEFAULT_RETENTION);
  const logger = options.logger ?? silentLogger();
  let db: Database.Database | undefined;
  try {
    mkdirSync(dirname(options.path), { recursive: true, mode: 0o700 });
    closeSync(openSync(options.path, "a", 0o600));
    db = new Database(options.path, { timeout: 0 });
    // Exclusive locking before WAL keeps the WAL index in process memory (no -shm file) and lets exactly one
    // server own the revision counter; a second opener gets SQLITE_BUSY.
    db.pragma("locking_mode = EXCLUSIVE");
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma(`cache_size = ${-Math.floor(cacheSizeBytes / 1024)}`);
    db.pragma("journal_size_limit = 67108864");
    if (options.maxSizeBytes !== undefined) {
      db.pragma(`max_page_count = ${Math.floor(options.maxSizeBytes / (db.pragma("page_size", { simple: true }) as number))}`);
    }
    db.exec(SCHEMA);
    const stmt = prepareStatements(db);
    const state = { revision: stmt.meta.get("revision")!.value, compacted: stmt.meta.get("compacted")!.value };
    logger.info({ path: options.path, ...state }, "storage opened");
    return new SqliteStorage(db, stmt, state, retention, options.clock ?? systemClock, logger);
  } catch (err) {
    db?.close();
    throw storageError(err, `cannot open storage at ${options.path}`);
  }
}

export class SqliteStorage extends BaseStorage {
  readonly #db: Database.Database;
  readonly #stmt: Statements;
  readonly #retention: Retention;
  readonly #compactBatch: number;
  /** One reusable transaction wrapper (BEGIN … COMMIT, ROLLBACK on throw). */
  readonly #tx: (fn: () => unknown) => unknown;
  #nextAgeCheck: number;
  /** Writes waiting for the next group commit, in arrival order. */
  readonly #pending: PendingWrite[] = [];
  #flushScheduled = false;

  /** Use openSqliteStorage: it opens and checks the file; this only wires the opened database. */
  constructor(db: Database.Database, stmt: Statements, state: { revision: number; compacted: number }, retention: Retention, clock: Clock, logger: Logger) {
    super(clock, logger);
    this.#db = db;
    this.#stmt = stmt;
    this.#tx = db.transaction((fn: () => unknown) => fn());
    this.#retention = retention;
    this.rev = state.revision;
    this.compacted = state.compacted;
    this.#compactBatch = retention.revisions === Infinity ? Infinity : Math.max(1, Math.min(1000, Math.floor(retention.revisions / 10)));
    this.#nextAgeCheck = clock.now() + ageCheckInterval(retention);
  }

  protected override guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storageError(err, "storage failure");
    }
  }

  protected readKey(key: string): KeyValue | undefined {
    return this.#stmt.get.get(key);
  }

  protected transaction<T>(fn: () => T): T {
    return this.#tx(fn) as T;
  }

  protected append(event: StorageEvent, ts: number): void {
    const { key, kv, revision } = event;
    if (event.type === "PUT") {
      this.#stmt.insertLog.run(revision, key, 0, kv.value, kv.createRevision, ts);
      this.#stmt.putKv.run(key, kv.createRevision, revision);
    } else {
      this.#stmt.insertLog.run(revision, key, 1, null, kv.createRevision, ts);
      this.#stmt.deleteKv.run(key);
    }
    this.#stmt.setMeta.run(revision, "revision");
  }

  /**
   * Queues the write for the next group commit. The flush runs in the check phase, after the event loop handled
   * every request that arrived during the previous commit, so one fsync covers all of them.
   */
  protected override write(key: string, decide: WriteDecision): Promise<StorageEvent> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ key, decide, resolve, reject });
      this.#scheduleFlush();
    });
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      const batch = this.#pending.splice(0, MAX_BATCH);
      if (this.#pending.length > 0) this.#scheduleFlush();
      if (batch.length > 0) this.#commit(batch);
    });
  }

  /**
   * Commits a batch in one transaction. Each write runs in its own savepoint against the state left by the earlier
   * writes of the batch, so a failed precondition or statement fails only that write. Some statement errors (disk
   * full, I/O) make SQLite roll back the whole transaction: that write fails and the batch runs again without it.
   * When the commit itself fails nothing of the batch is durable: every write fails and the revision goes back.
   */
  #commit(batch: readonly PendingWrite[]): void {
    let writes = batch;
    while (writes.length > 0) {
      const start = this.rev;
      const done: Array<{ write: PendingWrite; event: StorageEvent }> = [];
      const failed = new Map<PendingWrite, Error>();
      let culprit: PendingWrite | undefined;
      try {
        this.#tx(() => {
          for (const write of writes) {
            try {
              done.push({ write, event: this.#tx(() => this.apply(write.key, write.decide)) as StorageEvent });
            } catch (err) {
              if (!this.#db.inTransaction) {
                culprit = write;
                throw err;
              }
              failed.set(write, storageError(err, "storage failure"));
            }
          }
        });
      } catch (err) {
        this.rev = start;
        const error = storageError(err, culprit ? "storage failure" : "storage commit failed");
        if (culprit) {
          culprit.reject(error);
          writes = writes.filter((w) => w !== culprit);
          continue;
        }
        for (const write of writes) write.reject(failed.get(write) ?? error);
        return;
      }
      for (const [write, err] of failed) write.reject(err);
      this.committed(done.map((d) => d.event));
      for (const { write, event } of done) write.resolve(event);
      return;
    }
  }

  protected listLatest(range: ListRange): ListResult {
    const rows = this.#stmt.listLatest.all(range.from, range.startAfter ?? "", range.end, range.limit === 0 ? -1 : range.limit);
    const last = rows.at(-1);
    const full = range.limit !== 0 && rows.length === range.limit && last !== undefined;
    const remaining = full ? this.#stmt.countAfter.get(range.from, last.key, range.end)!.n : 0;
    return { items: rows, revision: this.rev, more: remaining > 0, remaining };
  }

  protected listAt(range: ListRange, revision: number): ListResult {
    const rows = this.#stmt.listAt.all(range.from, range.startAfter ?? "", range.end, revision, range.limit === 0 ? -1 : range.limit + 1);
    const more = range.limit !== 0 && rows.length > range.limit;
    if (more) rows.pop();
    return { items: rows, revision, more };
  }

  protected readEvents(prefix: string, end: string, after: number, limit: number): StorageEvent[] {
    return this.#stmt.events.all(after, prefix, end, limit).map((row) => this.#event(row));
  }

  protected compactTo(revision: number): void {
    for (let lo = this.compacted; lo < revision; ) {
      const hi = Math.min(lo + COMPACT_CHUNK, revision);
      this.transaction(() => {
        this.#stmt.compactSuperseded.run(lo, hi);
        this.#stmt.compactTombstones.run(lo, hi);
        this.#stmt.setMeta.run(hi, "compacted");
      });
      this.compacted = lo = hi;
    }
  }

  protected retain(): void {
    let target = revisionTarget(this.#retention, this.rev);
    if (target - this.compacted < this.#compactBatch) target = this.compacted;
    const now = this.clock.now();
    if (now >= this.#nextAgeCheck) {
      this.#nextAgeCheck = now + ageCheckInterval(this.#retention);
      target = Math.max(target, this.#stmt.writtenBefore.get(this.compacted, now - this.#retention.ageMs)?.rev ?? 0);
    }
    if (target > this.compacted) this.compactTo(Math.min(target, this.compacted + COMPACT_PER_WRITE));
  }

  /** Writes accepted before close are still committed (and acknowledged) before the database closes. */
  protected release(): void {
    while (this.#pending.length > 0) this.#commit(this.#pending.splice(0, MAX_BATCH));
    this.#db.close();
  }

  /** A log row as a watch event; the previous row of the key supplies prev (and the value a DELETE removed). */
  #event(row: LogRow): StorageEvent {
    const before = this.#stmt.previous.get(row.key, row.rev);
    const prev: KvRow | undefined = before && !before.deleted
      ? { key: before.key, value: before.value!, createRevision: before.createRevision, modRevision: before.rev }
      : undefined;
    if (row.deleted) {
      // Compaction never removes the row a later delete refers to: it is the newest of its key at the compaction point.
      if (!prev) throw new PlatformError("INTERNAL", `storage history lost the value deleted at revision ${row.rev}`);
      return { type: "DELETE", key: row.key, kv: prev, prev, revision: row.rev };
    }
    const kv: KvRow = { key: row.key, value: row.value!, createRevision: row.createRevision, modRevision: row.rev };
    return prev ? { type: "PUT", key: row.key, kv, prev, revision: row.rev } : { type: "PUT", key: row.key, kv, revision: row.rev };
  }
}

interface PendingWrite {
  readonly key: string;
  readonly decide: WriteDecision;
  readonly resolve: (event: StorageEvent) => void;
  readonly reject: (err: Error) => void;
}

/** SQLite failures become STORAGE_UNAVAILABLE (retryable unless the file itself is unusable); typed errors pass. */
function storageError(err: unknown, context: string): Error {
  if (err instanceof PlatformError) return err;
  if (err instanceof Database.SqliteError) {
    return new PlatformError("STORAGE_UNAVAILABLE", `${context}: ${err.message} (${err.code})`, {
      cause: err,
      retryable: !PERMANENT.has(err.code),
      details: { sqliteCode: err.code },
    });
  }
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code === "string") return new PlatformError("STORAGE_UNAVAILABLE", `${context}: ${(err as Error).message}`, { cause: err });
  return new PlatformError("INTERNAL", `${context}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

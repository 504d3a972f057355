// Durable embedded storage on SQLite (WAL) with group commit: a write resolves only after the batch it joined is
// committed and the write-ahead log holding it is flushed to disk. The flush (fdatasync) runs on a libuv thread, so
// the event loop goes on serving while the disk works; SQLite itself syncs only around checkpoints.
import { closeSync, fdatasync, fdatasyncSync, fstatSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { PlatformError, invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { KeyValue, ListResult, StorageEvent, StoredValue, ValueKind } from "./types.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { BaseStorage, type ListRange, type WriteDecision } from "./base-storage.js";
import { ageCheckInterval, resolveRetention, revisionTarget, type Retention, type RetentionOptions } from "./retention.js";
import { OrderedKeys } from "./ordered-keys.js";
import { SCHEMA, migrate, prepareStatements, type KvRow, type LogRow, type Statements } from "./sqlite-schema.js";

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
  /**
   * Flushes the write-ahead log (by descriptor) to disk, calling back once it is durable. Default: `fs.fdatasync`.
   * Tests replace it to hold or fail a flush.
   */
  readonly syncLog?: (fd: number, done: (err: Error | null) => void) => void;
}

const DEFAULT_RETENTION: Retention = { revisions: 100_000, ageMs: 10 * 60_000 };
/** Revisions compacted per transaction, so one compaction pass never holds the writer for long. */
const COMPACT_CHUNK = 2000;
/** At most this many revisions are compacted after one commit; a large backlog is worked off over later commits. */
const COMPACT_PER_WRITE = 5 * COMPACT_CHUNK;
/** At most this many writes share one transaction, so one commit never holds the event loop for long. */
const MAX_BATCH = 256;
/** Writes acknowledged between checkpoints; SQLite's own automatic checkpoint (which would not sync) is off. */
const CHECKPOINT_WRITES = 1000;
/** SQLite result codes that no retry will fix. */
const PERMANENT = new Set(["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_CANTOPEN"]);

/** The store of JSON text (the file holds its UTF-8 bytes). */
export async function openSqliteStorage(options: SqliteStorageOptions): Promise<SqliteStorage<string>> {
  return openSqlite<string>(options, "text");
}

/** The same file as a store of bytes, for a layer above that writes its own bytes (encryption at rest). */
export async function openSqliteByteStorage(options: SqliteStorageOptions): Promise<SqliteStorage<Uint8Array>> {
  return openSqlite<Uint8Array>(options, "bytes");
}

async function openSqlite<V extends StoredValue>(options: SqliteStorageOptions, kind: ValueKind): Promise<SqliteStorage<V>> {
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
    // Commits do not fsync: the storage flushes the log itself, off the event loop, before acknowledging (#sync).
    // Checkpoints copy the log into the database file, so they run by hand with synchronous=FULL, which makes SQLite
    // sync the log before the copy and the database after it; an automatic checkpoint would run unsynced.
    db.pragma("synchronous = OFF");
    db.pragma("wal_autocheckpoint = 0");
    db.pragma(`cache_size = ${-Math.floor(cacheSizeBytes / 1024)}`);
    db.pragma("journal_size_limit = 67108864");
    if (options.maxSizeBytes !== undefined) {
      db.pragma(`max_page_count = ${Math.floor(options.maxSizeBytes / (db.pragma("page_size", { simple: true }) as number))}`);
    }
    db.exec(SCHEMA);
    const schema = migrate(db);
    const stmt = prepareStatements<V>(db, kind);
    const state = { revision: stmt.meta.get("revision")!.value, compacted: stmt.meta.get("compacted")!.value };
    const log = openLog(options.path);
    if (schema !== stmt.meta.get("schema")!.value) logger.info({ path: options.path, from: schema, to: stmt.meta.get("schema")!.value }, "storage migrated");
    logger.info({ path: options.path, ...state }, "storage opened");
    return new SqliteStorage<V>(db, stmt, state, retention, options.clock ?? systemClock, logger, log, options.syncLog ?? fdatasync, kind);
  } catch (err) {
    db?.close();
    // The exclusive lock is taken at open: BUSY here means another process has this store open.
    if (err instanceof Database.SqliteError && (err.code === "SQLITE_BUSY" || err.code === "SQLITE_LOCKED")) {
      throw new PlatformError(
        "STORAGE_UNAVAILABLE",
        `cannot open storage at ${options.path}: another process (probably another platform-ca on the same data directory) holds it (${err.code}); stop that process or use another data directory`,
        { cause: err, retryable: true, details: { sqliteCode: err.code } },
      );
    }
    throw storageError(err, `cannot open storage at ${options.path}`);
  }
}

/** The write-ahead log file, opened (created 0600 if SQLite has not yet) so the storage can flush it by descriptor. */
interface LogFile {
  readonly path: string;
  fd: number;
  ino: number;
}

function openLog(dbPath: string): LogFile {
  const path = `${dbPath}-wal`;
  const fd = openSync(path, "a", 0o600);
  return { path, fd, ino: fstatSync(fd).ino };
}

export class SqliteStorage<V extends StoredValue = string> extends BaseStorage<V> {
  readonly #db: Database.Database;
  readonly #stmt: Statements<V>;
  readonly #retention: Retention;
  readonly #compactBatch: number;
  /** One reusable transaction wrapper (BEGIN … COMMIT, ROLLBACK on throw). */
  readonly #tx: (fn: () => unknown) => unknown;
  #nextAgeCheck: number;
  /** Writes waiting for the next group commit, in arrival order. */
  readonly #pending: PendingWrite<V>[] = [];
  #flushScheduled = false;
  readonly #log: LogFile;
  readonly #syncLog: (fd: number, done: (err: Error | null) => void) => void;
  /** Committed batches waiting for a log flush, in commit order. */
  #unsynced: UnsyncedBatch[] = [];
  /** Batches the flush in progress will acknowledge; undefined when no flush runs. */
  #syncing: UnsyncedBatch[] | undefined;
  #writesSinceCheckpoint = 0;
  /** Set once a flush failed: what is committed may not be on disk, so no further write is accepted. */
  #broken: PlatformError | undefined;
  #released = false;
  /**
   * The committed keys, in memory: SQLite counts a range (a list's `remaining`) by visiting every key in it, which
   * made each first page cost time in proportion to the collection; the index counts in O(log n).
   */
  readonly #keys = new OrderedKeys();

  /** Use openSqliteStorage: it opens and checks the file; this only wires the opened database. */
  constructor(
    db: Database.Database,
    stmt: Statements<V>,
    state: { revision: number; compacted: number },
    retention: Retention,
    clock: Clock,
    logger: Logger,
    log: LogFile,
    syncLog: (fd: number, done: (err: Error | null) => void) => void,
    kind: ValueKind,
  ) {
    super(clock, logger, kind);
    this.#log = log;
    this.#syncLog = syncLog;
    this.#db = db;
    this.#stmt = stmt;
    this.#tx = db.transaction((fn: () => unknown) => fn());
    this.#retention = retention;
    this.rev = state.revision;
    this.compacted = state.compacted;
    this.#compactBatch = retention.revisions === Infinity ? Infinity : Math.max(1, Math.min(1000, Math.floor(retention.revisions / 10)));
    this.#nextAgeCheck = clock.now() + ageCheckInterval(retention);
    for (const key of stmt.keys.iterate()) this.#keys.insert(key);
  }

  protected override guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw storageError(err, "storage failure");
    }
  }

  /** Fails once a log flush failed, so health checks (which ask for the revision) report the storage down. */
  override async revision(): Promise<number> {
    if (this.#broken) throw this.#broken;
    return super.revision();
  }

  protected readKey(key: string): KeyValue<V> | undefined {
    return this.#stmt.get.get(key);
  }

  protected transaction<T>(fn: () => T): T {
    return this.#tx(fn) as T;
  }

  protected append(event: StorageEvent<V>, ts: number): void {
    const { key, kv, revision } = event;
    if (event.type === "PUT") {
      this.#stmt.insertLog.run(revision, key, 0, asBound(kv.value) as V, kv.createRevision, ts);
      this.#stmt.putKv.run(key, kv.createRevision, revision);
    } else {
      this.#stmt.insertLog.run(revision, key, 1, null, kv.createRevision, ts);
      this.#stmt.deleteKv.run(key);
    }
  }

  /**
   * Queues the write for the next group commit. The flush runs in the check phase, after the event loop handled
   * every request that arrived during the previous commit, so one fsync covers all of them.
   */
  protected override write(key: string, decide: WriteDecision<V>): Promise<StorageEvent<V>> {
    return new Promise((resolve, reject) => {
      if (this.#broken) return reject(this.#broken);
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
   * Commits a batch in one transaction. Each write is decided against the state left by the earlier writes of the
   * batch, so a failed precondition fails only that write. Should a statement fail, the batch runs again with each
   * write in its own savepoint, so that write alone fails. Some statement errors (disk
   * full, I/O) make SQLite roll back the whole transaction: that write fails and the batch runs again without it.
   * When the commit itself fails nothing of the batch is durable: every write fails and the revision goes back.
   */
  #commit(batch: readonly PendingWrite<V>[]): void {
    let writes = batch;
    // First without savepoints (two statements less per write). A write's read and decision change nothing, so a
    // refusal fails only that write; a statement that fails while persisting may leave half a write, so the batch
    // is rolled back and runs again with a savepoint around each write.
    let careful = false;
    while (writes.length > 0) {
      const start = this.rev;
      const done: Array<{ write: PendingWrite<V>; event: StorageEvent<V> }> = [];
      const failed = new Map<PendingWrite<V>, Error>();
      let culprit: PendingWrite<V> | undefined;
      try {
        this.#tx(() => {
          for (const write of writes) {
            try {
              done.push({ write, event: careful ? (this.#tx(() => this.apply(write.key, write.decide)) as StorageEvent<V>) : this.#applyOrRedo(write) });
            } catch (err) {
              if (err === REDO_WITH_SAVEPOINTS) throw err;
              if (!this.#db.inTransaction) {
                culprit = write;
                throw err;
              }
              failed.set(write, storageError(err, "storage failure"));
            }
          }
          // The revision counter is stored once per batch, in the same transaction as its writes.
          if (done.length > 0) this.#stmt.setMeta.run(this.rev, "revision");
        });
      } catch (err) {
        this.rev = start;
        if (err === REDO_WITH_SAVEPOINTS) {
          careful = true;
          continue;
        }
        const error = storageError(err, culprit ? "storage failure" : "storage commit failed");
        if (culprit) {
          culprit.reject(error);
          writes = writes.filter((w) => w !== culprit);
          continue;
        }
        for (const write of writes) write.reject(failed.get(write) ?? error);
        return;
      }
      // Committed: reads see these rows from now on, so the key index follows now (not at the flush).
      for (const { event } of done) {
        if (event.type === "PUT") this.#keys.insert(event.key);
        else this.#keys.remove(event.key);
      }
      // Outcomes (refusals too: they were decided against the batch's earlier writes) wait for the log flush.
      this.#writesSinceCheckpoint += done.length;
      this.#unsynced.push({
        acknowledge: () => {
          for (const [write, err] of failed) write.reject(err);
          this.committed(done.map((d) => d.event));
          for (const { write, event } of done) write.resolve(event);
        },
        fail: (error) => {
          for (const write of [...failed.keys(), ...done.map((d) => d.write)]) write.reject(error);
        },
      });
      this.#sync();
      return;
    }
  }

  /** `apply` without a savepoint: a statement failing while persisting (after the decision) asks for the careful pass. */
  #applyOrRedo(write: PendingWrite<V>): StorageEvent<V> {
    const event = write.decide(this.readKey(write.key));
    try {
      this.append(event, this.clock.now());
    } catch {
      throw REDO_WITH_SAVEPOINTS;
    }
    this.rev = event.revision;
    return event;
  }

  #sync(): void {
    if (this.#syncing || this.#unsynced.length === 0 || this.#released) return;
    const batches = (this.#syncing = this.#unsynced);
    this.#unsynced = [];
    this.#syncLog(this.#log.fd, (err) => {
      // close() flushed synchronously and acknowledged these already.
      if (this.#syncing !== batches) return this.#closeLogIfReleased();
      this.#syncing = undefined;
      if (err) return this.#fail(err, batches);
      for (const batch of batches) batch.acknowledge();
      this.#checkpointIfDue();
      this.#sync();
    });
  }

  /**
   * After a failed flush the state of the file is unknown (the kernel may have dropped the dirty pages), so the
   * storage stops accepting writes until a restart lets SQLite recover from what is on disk.
   */
  #fail(err: Error, batches: readonly UnsyncedBatch[]): void {
    const broken = new PlatformError("STORAGE_UNAVAILABLE", `storage failure: the write-ahead log could not be flushed to disk: ${err.message}; writes are refused until the server restarts`, {
      cause: err,
      retryable: false,
    });
    this.#broken = broken;
    this.logger.error({ err }, "write-ahead log flush failed; storage refuses writes until restarted");
    for (const batch of [...batches, ...this.#unsynced.splice(0)]) batch.fail(broken);
    for (const write of this.#pending.splice(0)) write.reject(broken);
  }

  /** Copies the log into the database with synchronous=FULL (log synced before, database after), then resets the mode. */
  #checkpointIfDue(): void {
    if (this.#writesSinceCheckpoint < CHECKPOINT_WRITES) return;
    this.#writesSinceCheckpoint = 0;
    try {
      this.#db.pragma("synchronous = FULL");
      this.#db.pragma("wal_checkpoint(PASSIVE)");
    } catch (err) {
      this.logger.warn({ err }, "checkpoint failed; the next one retries");
    } finally {
      this.#db.pragma("synchronous = OFF");
    }
    this.#checkLogFile();
  }

  /** SQLite keeps one log file while it holds the database; should it ever be replaced, follow it (flushing both). */
  #checkLogFile(): void {
    let ino: number | undefined;
    try {
      ino = statSync(this.#log.path).ino;
    } catch {
      ino = undefined;
    }
    if (ino === this.#log.ino) return;
    this.logger.warn({ path: this.#log.path }, "write-ahead log file replaced; flushing through the new one");
    // Runs between flushes (never while one is on the thread pool), so the old descriptor is free to close.
    fdatasyncSync(this.#log.fd);
    closeSync(this.#log.fd);
    const fresh = openLog(this.#log.path.slice(0, -"-wal".length));
    this.#log.fd = fresh.fd;
    this.#log.ino = fresh.ino;
  }

  #closeLogIfReleased(): void {
    if (this.#released) closeSync(this.#log.fd);
  }

  protected listLatest(range: ListRange): ListResult<V> {
    const rows = this.#stmt.listLatest.all(range.from, range.startAfter ?? "", range.end, range.limit === 0 ? -1 : range.limit);
    const last = rows.at(-1);
    const full = range.limit !== 0 && rows.length === range.limit && last !== undefined;
    const remaining = full ? this.#keys.count(last.key, range.end, true) : 0;
    return { items: rows, revision: this.rev, more: remaining > 0, remaining };
  }

  protected listAt(range: ListRange, revision: number): ListResult<V> {
    const rows = this.#stmt.listAt.all(range.from, range.startAfter ?? "", range.end, revision, range.limit === 0 ? -1 : range.limit + 1);
    const more = range.limit !== 0 && rows.length > range.limit;
    if (more) rows.pop();
    return { items: rows, revision, more };
  }

  protected readEvents(prefix: string, end: string, after: number, limit: number): StorageEvent<V>[] {
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

  /**
   * Skips `by` revisions and compacts at the next one, as etcd's `--bump-revision N --mark-compacted` does after a
   * restore: the revisions handed out since the copy was taken went with their writes, and must neither be handed out
   * again nor be resumed from. The store moves from revision `from` to `from + by + 1`, so `from + 1 … from + by` (the
   * lost writes, when `by` counts them) are older than the compacted revision and answer GONE, like every earlier one.
   * The history up to now is compacted first (in chunks, each a consistent store); then the revision and the
   * compaction floor move in one transaction, so a store opened later answers alike. No row is written: objects keep
   * their revisions.
   */
  async fenceRevision(by: number): Promise<{ readonly from: number; readonly to: number }> {
    this.checkOpen();
    if (this.#broken) throw this.#broken;
    const from = this.rev;
    const to = from + by + 1;
    if (!Number.isSafeInteger(by) || by < 1 || !Number.isSafeInteger(to)) throw invalidOption("by", `a whole number from 1 to ${Number.MAX_SAFE_INTEGER - from - 1}`, by);
    this.guard(() => {
      this.compactTo(from);
      this.transaction(() => {
        this.#stmt.setMeta.run(to, "revision");
        this.#stmt.setMeta.run(to, "compacted");
      });
    });
    this.rev = this.compacted = to;
    // Durable before it is reported: the writes after the fence must never be numbered below it.
    await new Promise<void>((resolve, reject) => this.#syncLog(this.#log.fd, (err) => (err ? reject(storageError(err, "storage failure: the write-ahead log could not be flushed to disk")) : resolve())));
    return { from, to };
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

  /**
   * Writes accepted before close are still committed, flushed and acknowledged before the database closes; a flush
   * still running on the thread pool then finds its batches acknowledged and only closes the log descriptor.
   */
  protected release(): void {
    while (this.#pending.length > 0 && !this.#broken) this.#commit(this.#pending.splice(0, MAX_BATCH));
    const waiting = [...(this.#syncing ?? []), ...this.#unsynced];
    const flushing = this.#syncing !== undefined;
    this.#syncing = undefined;
    this.#unsynced = [];
    this.#released = true;
    let flushed = true;
    try {
      if (waiting.length > 0) fdatasyncSync(this.#log.fd);
    } catch (err) {
      flushed = false;
      this.#fail(err as Error, waiting);
    }
    if (flushed) for (const batch of waiting) batch.acknowledge();
    // Closing checkpoints the log into the database; with synchronous=FULL that copy is synced too.
    this.#db.pragma("synchronous = FULL");
    this.#db.close();
    if (!flushing) closeSync(this.#log.fd);
  }

  /** A log row as a watch event; the previous row of the key supplies prev (and the value a DELETE removed). */
  #event(row: LogRow<V>): StorageEvent<V> {
    const before = this.#stmt.previous.get(row.key, row.rev);
    const prev: KvRow<V> | undefined = before && !before.deleted
      ? { key: before.key, value: before.value!, createRevision: before.createRevision, modRevision: before.rev }
      : undefined;
    if (row.deleted) {
      // Compaction never removes the row a later delete refers to: it is the newest of its key at the compaction point.
      if (!prev) throw new PlatformError("INTERNAL", `storage history lost the value deleted at revision ${row.rev}`);
      return { type: "DELETE", key: row.key, kv: prev, prev, revision: row.rev };
    }
    const kv: KvRow<V> = { key: row.key, value: row.value!, createRevision: row.createRevision, modRevision: row.rev };
    return prev ? { type: "PUT", key: row.key, kv, prev, revision: row.rev } : { type: "PUT", key: row.key, kv, revision: row.rev };
  }
}

/** Thrown inside a batch's transaction to roll it back and commit it again with a savepoint per write. */
const REDO_WITH_SAVEPOINTS = Symbol("redo the batch with savepoints");

/** A committed batch whose outcomes wait for the log flush that makes it durable. */
interface UnsyncedBatch {
  acknowledge(): void;
  fail(error: Error): void;
}

interface PendingWrite<V extends StoredValue> {
  readonly key: string;
  readonly decide: WriteDecision<V>;
  readonly resolve: (event: StorageEvent<V>) => void;
  readonly reject: (err: Error) => void;
}

/** Bytes go to SQLite as a Buffer view (no copy); text as is (the statement stores it as a BLOB). */
function asBound<V extends StoredValue>(value: V): string | Buffer {
  return typeof value === "string" ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
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

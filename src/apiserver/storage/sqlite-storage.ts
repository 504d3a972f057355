// Durable embedded storage on SQLite (WAL) with group commit: a write resolves only after the batch it joined is
// committed and the write-ahead log holding it is flushed to disk (the queue, the flush and checkpoints:
// sqlite-group-commit.ts).
import Database from "better-sqlite3";
import { PlatformError, invalidOption } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { KeyValue, ListResult, StorageEvent, StoredValue, ValueKind } from "./types.js";
import type { Clock } from "../../time/clock.js";
import { BaseStorage, expiryOf, type ListRange, type WriteDecision } from "./base-storage.js";
import { ageCheckInterval, revisionTarget, type Retention } from "./retention.js";
import { OrderedKeys } from "./ordered-keys.js";
import type { KvRow, LogRow, Statements } from "./sqlite-schema.js";
import { GroupCommit, type LogFile, type PendingWrite, type SyncLog } from "./sqlite-group-commit.js";
import { sqliteMetrics } from "./sqlite-metrics.js";
import { RowCache } from "./row-cache.js";

/** Revisions compacted per transaction, so one compaction pass never holds the writer for long. */
const COMPACT_CHUNK = 2000;
/** At most this many revisions are compacted after one commit; a large backlog is worked off over later commits. */
const COMPACT_PER_WRITE = 5 * COMPACT_CHUNK;
/** SQLite result codes that no retry will fix. */
const PERMANENT = new Set(["SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_READONLY", "SQLITE_CANTOPEN"]);

export class SqliteStorage<V extends StoredValue = string> extends BaseStorage<V> {
  readonly #db: Database.Database;
  readonly #stmt: Statements<V>;
  readonly #retention: Retention;
  readonly #compactBatch: number;
  /** One reusable transaction wrapper (BEGIN … COMMIT, ROLLBACK on throw). */
  readonly #tx: (fn: () => unknown) => unknown;
  #nextAgeCheck: number;
  /** The queue of the next batch and the log flush of the committed ones. */
  readonly #group: GroupCommit<V>;
  /**
   * The committed keys, in memory: SQLite counts a range (a list's `remaining`) by visiting every key in it, which
   * made each first page cost time in proportion to the collection; the index counts in O(log n).
   */
  readonly #keys = new OrderedKeys();
  /**
   * Keys written so far by the batch being committed: not in `#keys` until it commits, yet their rows are there to
   * read, and `#rows` does not hold them yet.
   */
  readonly #batchKeys = new Set<string>();
  /** The committed rows of recently read and written keys, so an update's reads skip SQLite. */
  readonly #rows = new RowCache<V>();

  /** Use openSqliteStorage: it opens and checks the file; this only wires the opened database. */
  constructor(
    db: Database.Database,
    stmt: Statements<V>,
    state: { revision: number; compacted: number },
    retention: Retention,
    clock: Clock,
    logger: Logger,
    log: LogFile,
    syncLog: SyncLog,
    kind: ValueKind,
  ) {
    super(clock, logger, kind);
    this.#group = new GroupCommit<V>(db, log, syncLog, logger, (batch) => this.#commit(batch));
    this.#db = db;
    this.#stmt = stmt;
    this.#tx = db.transaction((fn: () => unknown) => fn());
    this.#retention = retention;
    this.rev = state.revision;
    this.compacted = state.compacted;
    this.#compactBatch = retention.revisions === Infinity ? Infinity : Math.max(1, Math.min(1000, Math.floor(retention.revisions / 10)));
    this.#nextAgeCheck = clock.now() + ageCheckInterval(retention);
    for (const key of stmt.keys.iterate()) this.#keys.insert(key);
    // Keys whose time ran out while the store was closed are deleted at the first sweep.
    for (const entry of stmt.expiring.iterate()) this.expirer.add(entry);
    sqliteMetrics.track(this);
  }

  /**
   * VACUUM: the database written again without its free pages (a compaction or a delete frees pages for reuse but never
   * shrinks the file, as etcd's defrag is needed after its compactions). For a store no server has open (the exclusive
   * lock holds the others out) with no write in flight; the rebuilt pages go through the log, and the file shrinks when
   * the store closes and checkpoints it. Returns the size before and after. A VACUUM that fails (the disk full) is rolled
   * back by SQLite: the store is as it was.
   */
  defragment(): { readonly before: number; readonly after: number } {
    const before = this.sizeBytes()!;
    try {
      this.#db.exec("VACUUM");
    } catch (err) {
      throw storageError(err, "defragment failed, the store is as it was");
    }
    return { before, after: this.sizeBytes()! };
  }

  /**
   * The disk space a defragment needs, in bytes: the pages in use go to a temporary database (on disk in SQLite's
   * temporary directory only past what the page cache holds), then back through the log beside the store, each page
   * with a 24-byte frame header (a sixty-fourth allowed).
   */
  defragmentSpace(): { readonly log: number; readonly temporary: number } {
    const pageSize = this.#db.pragma("page_size", { simple: true }) as number;
    const live = this.sizeBytes()! - (this.#db.pragma("freelist_count", { simple: true }) as number) * pageSize;
    // cache_size is in pages when positive, in KiB when negative (how the store sets it).
    const cacheSize = this.#db.pragma("cache_size", { simple: true }) as number;
    const cache = cacheSize < 0 ? -cacheSize * 1024 : cacheSize * pageSize;
    return { log: live + Math.ceil(live / 64), temporary: live > cache ? live : 0 };
  }

  /** The database's size in bytes (pages × page size, the log's pages included once copied in); undefined once closed. */
  sizeBytes(): number | undefined {
    if (!this.#db.open) return undefined;
    return (this.#db.pragma("page_count", { simple: true }) as number) * (this.#db.pragma("page_size", { simple: true }) as number);
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
    if (this.#group.broken) throw this.#group.broken;
    return super.revision();
  }

  /**
   * A key neither committed nor written earlier in the batch being committed has no row: no statement is run for it
   * (most writes are creates of new keys, and the lookup was a tenth of a create's storage time).
   */
  protected readKey(key: string): KeyValue<V> | undefined {
    // Written earlier in the batch being committed: its uncommitted row, which only the transaction sees.
    if (this.#batchKeys.has(key)) return this.#stmt.get.get(key);
    // A held row is a committed key's (a delete takes it out as it commits): no walk of the key index either.
    const cached = this.#rows.get(key);
    if (cached) return cached;
    if (!this.#keys.has(key)) return undefined;
    const row = this.#stmt.get.get(key);
    if (row) this.#rows.set(row);
    return row;
  }

  protected transaction<T>(fn: () => T): T {
    return this.#tx(fn) as T;
  }

  protected append(event: StorageEvent<V>, ts: number): void {
    const { key, kv, revision } = event;
    if (event.type === "PUT") {
      this.#stmt.insertLog.run(revision, key, 0, asBound(kv.value) as V, kv.createRevision, ts);
      this.#stmt.putKv.run(key, kv.createRevision, revision, expiryOf(event) ?? null);
    } else {
      this.#stmt.insertLog.run(revision, key, 1, null, kv.createRevision, ts);
      this.#stmt.deleteKv.run(key);
    }
  }

  /** Queued for the next group commit, which comes back to `#commit`. */
  protected override write(key: string, decide: WriteDecision<V>): Promise<StorageEvent<V>> {
    return this.#group.write(key, decide);
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
      this.#batchKeys.clear();
      try {
        this.#tx(() => {
          for (const write of writes) {
            try {
              done.push({ write, event: careful ? (this.#tx(() => this.apply(write.key, write.decide)) as StorageEvent<V>) : this.#applyOrRedo(write) });
              // Only now: the write's own decision read the committed row (a refused or rolled-back write wrote none).
              this.#batchKeys.add(write.key);
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
        if (event.type === "PUT") {
          // An update's key is in the index already (its decision read the row).
          if (!event.prev) this.#keys.insert(event.key);
          this.#rows.set(event.kv);
        } else {
          this.#keys.remove(event.key);
          this.#rows.delete(event.key);
        }
      }
      this.#batchKeys.clear();
      // Outcomes (refusals too: they were decided against the batch's earlier writes) wait for the log flush.
      this.#group.awaitFlush(done.length, {
        acknowledge: () => {
          for (const [write, err] of failed) write.reject(err);
          this.committed(done.map((d) => d.event));
          for (const { write, event } of done) write.resolve(event);
        },
        fail: (error) => {
          for (const write of [...failed.keys(), ...done.map((d) => d.write)]) write.reject(error);
        },
      });
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
    if (this.#group.broken) throw this.#group.broken;
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
    await new Promise<void>((resolve, reject) => this.#group.flushOnce((err) => (err ? reject(storageError(err, "storage failure: the write-ahead log could not be flushed to disk")) : resolve())));
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

  /** Writes accepted before close are still committed and flushed (GroupCommit.release), then the database closes. */
  protected release(): void {
    sqliteMetrics.untrack(this);
    this.#group.release();
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

/** Bytes go to SQLite as a Buffer view (no copy); text as is (the statement stores it as a BLOB). */
function asBound<V extends StoredValue>(value: V): string | Buffer {
  return typeof value === "string" ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** SQLite failures become STORAGE_UNAVAILABLE (retryable unless the file itself is unusable); typed errors pass. */
export function storageError(err: unknown, context: string): Error {
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

// Group commit of the SQLite store: writes queue for the next batch, and a committed batch is acknowledged only once
// the write-ahead log holding it is flushed to disk. The flushes (fdatasync of the log, and of the database file after
// a checkpoint) run on a libuv thread, so the event loop goes on serving while the disk works; SQLite never syncs.
import { closeSync, fdatasyncSync, fstatSync, openSync, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { PlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { StorageEvent, StoredValue } from "./types.js";
import type { WriteDecision } from "./base-storage.js";
import { sqliteMetrics, type FlushedFile } from "./sqlite-metrics.js";

/** At most this many writes share one transaction, so one commit never holds the event loop for long. */
const MAX_BATCH = 256;
/** Writes acknowledged between checkpoints; SQLite's own automatic checkpoint (which would not sync) is off. */
const CHECKPOINT_WRITES = 1000;

/** The files the storage flushes, as its errors name them. */
const FILES = { log: "write-ahead log", db: "database file" } as const;

/** Flushes the write-ahead log (by descriptor) to disk, calling back once it is durable. */
export type SyncLog = (fd: number, done: (err: Error | null) => void) => void;

/**
 * The write-ahead log file, opened (created 0600 if SQLite has not yet) so the storage can flush it by descriptor,
 * and the database file's own descriptor, to flush a checkpoint's copy.
 */
export interface LogFile {
  readonly path: string;
  fd: number;
  ino: number;
  readonly dbFd: number;
}

export function openLog(dbPath: string): LogFile {
  const path = `${dbPath}-wal`;
  const { fd, ino } = openWal(path);
  try {
    return { path, fd, ino, dbFd: openSync(dbPath, "r+") };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** The log file alone (at open, and when SQLite replaced it): its descriptor and inode. */
function openWal(path: string): { fd: number; ino: number } {
  const fd = openSync(path, "a", 0o600);
  try {
    return { fd, ino: fstatSync(fd).ino };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/**
 * The writes of one store from their arrival to their acknowledgement: the queue of the next batch, the committed
 * batches waiting for a log flush, the flush in progress, and the checkpoints run between flushes. The store commits
 * each batch (`commit`); a failed flush breaks the group commit for good (`broken`).
 */
export class GroupCommit<V extends StoredValue> {
  readonly #db: Database.Database;
  readonly #commit: (batch: readonly PendingWrite<V>[]) => void;
  readonly #logger: Logger;
  /** Writes waiting for the next group commit, in arrival order. */
  readonly #pending: PendingWrite<V>[] = [];
  #flushScheduled = false;
  readonly #log: LogFile;
  readonly #syncLog: SyncLog;
  /** Committed batches waiting for a log flush, in commit order. */
  #unsynced: UnsyncedBatch[] = [];
  /** Batches the flush in progress will acknowledge; undefined when no flush runs. */
  #syncing: UnsyncedBatch[] | undefined;
  #writesSinceCheckpoint = 0;
  /**
   * Set while a checkpoint's copy into the database file is being flushed: no batch commits until it is on disk,
   * because the next write transaction may restart the log over the frames just copied.
   */
  #dbSyncing = false;
  /** Set once a flush failed: what is committed may not be on disk, so no further write is accepted. */
  #broken: PlatformError | undefined;
  #released = false;

  constructor(db: Database.Database, log: LogFile, syncLog: SyncLog, logger: Logger, commit: (batch: readonly PendingWrite<V>[]) => void) {
    this.#db = db;
    this.#log = log;
    this.#syncLog = syncLog;
    this.#logger = logger;
    this.#commit = commit;
  }

  get broken(): PlatformError | undefined {
    return this.#broken;
  }

  /**
   * Queues the write for the next group commit. The flush runs in the check phase, after the event loop handled
   * every request that arrived during the previous commit, so one fsync covers all of them.
   */
  write(key: string, decide: WriteDecision<V>): Promise<StorageEvent<V>> {
    return new Promise((resolve, reject) => {
      if (this.#broken) return reject(this.#broken);
      this.#pending.push({ key, decide, resolve, reject });
      this.#scheduleFlush();
    });
  }

  /**
   * Commits the queue in the next check phase, unless a log flush is out: then the queue waits for its end (its writes
   * could not be acknowledged before the next flush anyway) and goes in one transaction, not one per turn of the
   * event loop, so the pages a commit writes to the log (the tables' leaves, the revision) are written once for them
   * all. A full batch does not wait.
   */
  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      if (this.#syncing && this.#pending.length < MAX_BATCH) return;
      this.#commitQueued();
    });
  }

  /** Commits one batch of the queue; what is left waits for the next check phase. Nothing while the database syncs. */
  #commitQueued(): void {
    if (this.#dbSyncing) return;
    const batch = this.#pending.splice(0, MAX_BATCH);
    if (this.#pending.length > 0) this.#scheduleFlush();
    if (batch.length > 0) this.#commit(batch);
  }

  /** Queues a batch the store committed (of `writes` writes) for the log flush, and starts one unless one runs. */
  awaitFlush(writes: number, batch: UnsyncedBatch): void {
    sqliteMetrics.committed(writes);
    this.#writesSinceCheckpoint += writes;
    this.#unsynced.push(batch);
    this.#sync();
  }

  /** One flush of the log outside the batches (the revision fence waits for it). */
  flushOnce(done: (err: Error | null) => void): void {
    this.#flush("log", this.#log.fd, done);
  }

  /** Flushes `fd` on the thread pool (the injected SyncLog), its time counted in the flush metrics. */
  #flush(file: FlushedFile, fd: number, done: (err: Error | null) => void): void {
    const started = performance.now();
    this.#syncLog(fd, (err) => {
      sqliteMetrics.flushed(file, started);
      done(err);
    });
  }

  #sync(): void {
    if (this.#syncing || this.#unsynced.length === 0 || this.#released) return;
    const batches = (this.#syncing = this.#unsynced);
    this.#unsynced = [];
    this.#flush("log", this.#log.fd, (err) => {
      // close() flushed synchronously and acknowledged these already.
      if (this.#syncing !== batches) return this.#closeIfReleased(this.#log.fd);
      this.#syncing = undefined;
      if (err) return this.#fail(err, batches);
      for (const batch of batches) batch.acknowledge();
      // The writes queued during the flush are committed now (or once the checkpoint's copy is on disk), and the
      // next flush covers them.
      if (!this.#checkpointIfDue()) this.#commitQueued();
      this.#sync();
    });
  }

  /**
   * After a failed flush the state of the file is unknown (the kernel may have dropped the dirty pages), so the
   * storage stops accepting writes until a restart lets SQLite recover from what is on disk.
   */
  #fail(err: Error, batches: readonly UnsyncedBatch[], file: keyof typeof FILES = "log"): void {
    const broken = new PlatformError("STORAGE_UNAVAILABLE", `storage failure: the ${FILES[file]} could not be flushed to disk: ${err.message}; writes are refused until the server restarts`, {
      cause: err,
      retryable: false,
    });
    this.#broken = broken;
    this.#logger.error({ err }, `${FILES[file]} flush failed; storage refuses writes until restarted`);
    for (const batch of [...batches, ...this.#unsynced.splice(0)]) batch.fail(broken);
    for (const write of this.#pending.splice(0)) write.reject(broken);
  }

  /**
   * Copies the log into the database file, then flushes that file on the thread pool; returns whether that flush
   * runs (and will commit the queue when it ends). SQLite's own checkpoint under synchronous=FULL syncs the log
   * before the copy and the database after it, on the event loop (half a checkpoint's time); here the first holds
   * already — it runs only when every committed batch is flushed, so the log has no frame that is not on disk — and
   * the second is the pool's flush, before which no batch commits: a write transaction after a complete checkpoint
   * restarts the log from its start, over frames the database file must hold on disk first.
   */
  #checkpointIfDue(): boolean {
    if (this.#writesSinceCheckpoint < CHECKPOINT_WRITES || this.#unsynced.length > 0 || this.#released) return false;
    this.#writesSinceCheckpoint = 0;
    let copied = false;
    try {
      const [result] = this.#db.pragma("wal_checkpoint(PASSIVE)") as Array<{ checkpointed: number }>;
      copied = (result?.checkpointed ?? 0) > 0;
    } catch (err) {
      this.#logger.warn({ err }, "checkpoint failed; the next one retries");
    }
    this.#checkLogFile();
    if (!copied) return false;
    this.#dbSyncing = true;
    this.#flush("database", this.#log.dbFd, (err) => {
      if (!this.#dbSyncing) return this.#closeIfReleased(this.#log.dbFd);
      this.#dbSyncing = false;
      if (err) return this.#fail(err, [], "db");
      this.#commitQueued();
    });
    return true;
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
    this.#logger.warn({ path: this.#log.path }, "write-ahead log file replaced; flushing through the new one");
    // Runs between flushes (never while one is on the thread pool), so the old descriptor is free to close.
    fdatasyncSync(this.#log.fd);
    closeSync(this.#log.fd);
    const fresh = openWal(this.#log.path);
    this.#log.fd = fresh.fd;
    this.#log.ino = fresh.ino;
  }

  /** A flush that ended after close(): its descriptor, left open for it, is closed now. */
  #closeIfReleased(fd: number): void {
    if (this.#released) closeSync(fd);
  }

  /**
   * Writes accepted before close are still committed, flushed and acknowledged before the database closes; a flush
   * still running on the thread pool then finds its batches acknowledged and only closes the log descriptor.
   */
  release(): void {
    // A checkpoint's copy still being flushed on the pool: on disk first (its own callback then only closes the file).
    const dbFlushing = this.#dbSyncing;
    if (dbFlushing) {
      this.#dbSyncing = false;
      try {
        fdatasyncSync(this.#log.dbFd);
      } catch (err) {
        this.#fail(err as Error, [], "db");
      }
    }
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
    if (!dbFlushing) closeSync(this.#log.dbFd);
  }
}

/** A committed batch whose outcomes wait for the log flush that makes it durable. */
export interface UnsyncedBatch {
  acknowledge(): void;
  fail(error: Error): void;
}

export interface PendingWrite<V extends StoredValue> {
  readonly key: string;
  readonly decide: WriteDecision<V>;
  readonly resolve: (event: StorageEvent<V>) => void;
  readonly reject: (err: Error) => void;
}

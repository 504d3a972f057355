// Opening the SQLite store: checks the options, creates the file (0600) and its directory, sets the pragmas the
// durable write relies on, migrates the schema and hands the open database to SqliteStorage (sqlite-storage.ts).
import { closeSync, fdatasync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { PlatformError, invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { StoredValue, ValueKind } from "./types.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { resolveRetention, type Retention, type RetentionOptions } from "./retention.js";
import { SCHEMA, migrate, prepareStatements } from "./sqlite-schema.js";
import { openLog } from "./sqlite-group-commit.js";
import { SqliteStorage, storageError } from "./sqlite-storage.js";

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
    // Checkpoints copy the log into the database file, so they run by hand, when the log is on disk, and the storage
    // flushes the database file after the copy (sqlite-group-commit.ts); an automatic one would run at any time.
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

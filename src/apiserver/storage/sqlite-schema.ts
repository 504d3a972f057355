// The SQLite layout of the storage and its prepared statements (prepared once per connection, reused for every call).
//
// `log` holds one row per revision (the value written, or a tombstone) and is the MVCC history: list at a
// revision, continue tokens and watch resume all read it. Compaction keeps, for every key, its newest row at or
// below the compacted revision, so `log` also holds each live value exactly once; `kv` only points at it.
// Values are BLOBs (schema 2): the UTF-8 of the JSON text, or whatever bytes a layer above wrote (encryption at
// rest). Schema 1 kept them as TEXT; `migrate` converts such a store in place on first open. `kv.expires` (schema 3)
// is when a key written with a time to live is deleted (ms since the epoch; NULL: never).
import type Database from "better-sqlite3";
import { PlatformError } from "../../errors.js";
import type { StoredValue, ValueKind } from "./types.js";

/** The layout this release writes; a store of a newer one is refused rather than misread. */
export const SCHEMA_VERSION = 3;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
  rev INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  value BLOB,
  create_rev INTEGER NOT NULL,
  ts INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, expires INTEGER) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', ${SCHEMA_VERSION}), ('revision', 1), ('compacted', 0);
`;

/**
 * Brings a store written by an earlier release to SCHEMA_VERSION, in one transaction (a crash leaves the old layout).
 * Schema 1 → 2: the log is copied into a table whose values are BLOBs; revisions, history and the meta rows stay.
 * 2 → 3: `kv` gains the `expires` column, empty (nothing was written with a time to live before).
 */
export function migrate(db: Database.Database): number {
  const row = db.prepare<[], { value: number }>("SELECT value FROM meta WHERE name = 'schema'").get();
  const from = row?.value ?? SCHEMA_VERSION;
  if (from > SCHEMA_VERSION) {
    throw new PlatformError("STORAGE_UNAVAILABLE", `storage schema ${from} was written by a newer release (this one reads up to ${SCHEMA_VERSION}); run that release or restore a backup`, {
      retryable: false,
    });
  }
  if (from === 1) {
    db.transaction(() => {
      db.exec(`
        CREATE TABLE log_v2 (rev INTEGER PRIMARY KEY, key TEXT NOT NULL, deleted INTEGER NOT NULL, value BLOB, create_rev INTEGER NOT NULL, ts INTEGER NOT NULL);
        INSERT INTO log_v2 (rev, key, deleted, value, create_rev, ts) SELECT rev, key, deleted, CAST(value AS BLOB), create_rev, ts FROM log;
        DROP TABLE log;
        ALTER TABLE log_v2 RENAME TO log;
        CREATE INDEX log_key_rev ON log (key, rev);
        UPDATE meta SET value = 2 WHERE name = 'schema';`);
    })();
  }
  if (from <= 2) db.transaction(() => db.exec("ALTER TABLE kv ADD COLUMN expires INTEGER; UPDATE meta SET value = 3 WHERE name = 'schema';"))();
  return from;
}

/** A text store reads the BLOB back as text (no Buffer per row: LIST keeps splicing resourceVersion into strings). */
const valueColumn = (kind: ValueKind, table: string) => (kind === "text" ? `CAST(${table}value AS TEXT)` : `${table}value`);

export interface KvRow<V extends StoredValue = string> {
  key: string;
  value: V;
  createRevision: number;
  modRevision: number;
}

export interface LogRow<V extends StoredValue = string> {
  rev: number;
  key: string;
  deleted: number;
  value: V | null;
  createRevision: number;
}

export interface Statements<V extends StoredValue = string> {
  readonly meta: Database.Statement<[string], { value: number }>;
  readonly setMeta: Database.Statement<[number, string]>;
  readonly get: Database.Statement<[string], KvRow<V>>;
  readonly listLatest: Database.Statement<[string, string, string, number], KvRow<V>>;
  readonly keys: Database.Statement<[], string>;
  readonly listAt: Database.Statement<[string, string, string, number, number], KvRow<V>>;
  readonly events: Database.Statement<[number, string, string, number], LogRow<V>>;
  readonly previous: Database.Statement<[string, number], LogRow<V>>;
  readonly insertLog: Database.Statement<[number, string, number, V | null, number, number]>;
  readonly putKv: Database.Statement<[string, number, number, number | null]>;
  readonly expiring: Database.Statement<[], { key: string; rev: number; at: number }>;
  readonly deleteKv: Database.Statement<[string]>;
  readonly writtenBefore: Database.Statement<[number, number], { rev: number | null }>;
  readonly compactSuperseded: Database.Statement<[number, number]>;
  readonly compactTombstones: Database.Statement<[number, number]>;
}

export function prepareStatements<V extends StoredValue>(db: Database.Database, kind: ValueKind): Statements<V> {
  const KV_COLUMNS = `k.key AS key, ${valueColumn(kind, "l.")} AS value, k.create_rev AS createRevision, k.mod_rev AS modRevision`;
  const LOG_COLUMNS = `rev, key, deleted, ${valueColumn(kind, "")} AS value, create_rev AS createRevision`;
  return {
    meta: db.prepare<[string], { value: number }>("SELECT value FROM meta WHERE name = ?"),
    setMeta: db.prepare<[number, string]>("UPDATE meta SET value = ? WHERE name = ?"),
    get: db.prepare<[string], KvRow<V>>(`SELECT ${KV_COLUMNS} FROM kv k JOIN log l ON l.rev = k.mod_rev WHERE k.key = ?`),
    /** [from, end) strictly after startAfter ('' when none), limit -1 = all. */
    listLatest: db.prepare<[string, string, string, number], KvRow<V>>(
      `SELECT ${KV_COLUMNS} FROM kv k JOIN log l ON l.rev = k.mod_rev WHERE k.key >= ? AND k.key > ? AND k.key < ? ORDER BY k.key LIMIT ?`,
    ),
    /** Every current key in order (read once at open for the in-memory index that counts ranges). */
    keys: db.prepare<[], string>("SELECT key FROM kv ORDER BY key").pluck(),
    /** The newest row of each key at or below a revision, tombstones left out. */
    listAt: db.prepare<[string, string, string, number, number], KvRow<V>>(
      // Walks the (key, rev) index in key order, so rows stream out without a sort and LIMIT stops early.
      `SELECT l.key AS key, ${valueColumn(kind, "l.")} AS value, l.create_rev AS createRevision, l.rev AS modRevision
       FROM log l INDEXED BY log_key_rev WHERE l.key >= ? AND l.key > ? AND l.key < ? AND l.deleted = 0
       AND l.rev = (SELECT MAX(x.rev) FROM log x WHERE x.key = l.key AND x.rev <= ?) ORDER BY l.key LIMIT ?`,
    ),
    events: db.prepare<[number, string, string, number], LogRow<V>>(
      // `+key` keeps the planner on the rowid (revision) order instead of the key index plus a sort.
      `SELECT ${LOG_COLUMNS} FROM log WHERE rev > ? AND +key >= ? AND +key < ? ORDER BY rev LIMIT ?`,
    ),
    previous: db.prepare<[string, number], LogRow<V>>(`SELECT ${LOG_COLUMNS} FROM log WHERE key = ? AND rev < ? ORDER BY rev DESC LIMIT 1`),
    insertLog: db.prepare<[number, string, number, V | null, number, number]>(
      // Text is stored as the BLOB of its UTF-8 by SQLite itself, with no Buffer made per write.
      `INSERT INTO log (rev, key, deleted, value, create_rev, ts) VALUES (?, ?, ?, ${kind === "text" ? "CAST(? AS BLOB)" : "?"}, ?, ?)`,
    ),
    putKv: db.prepare<[string, number, number, number | null]>(
      "INSERT INTO kv (key, create_rev, mod_rev, expires) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET mod_rev = excluded.mod_rev, expires = excluded.expires",
    ),
    /** The keys written with a time to live (read once at open, to schedule their deletion). */
    expiring: db.prepare<[], { key: string; rev: number; at: number }>("SELECT key, mod_rev AS rev, expires AS at FROM kv WHERE expires IS NOT NULL"),
    deleteKv: db.prepare<[string]>("DELETE FROM kv WHERE key = ?"),
    /** Newest revision in (compacted, current] written before a time: the age rule's compaction target. */
    writtenBefore: db.prepare<[number, number], { rev: number | null }>("SELECT MAX(rev) AS rev FROM log WHERE rev > ? AND ts < ?"),
    /** Rows superseded by a newer row of the same key within (lo, hi]. */
    compactSuperseded: db.prepare<[number, number]>(
      `DELETE FROM log WHERE rev IN (
         SELECT o.rev FROM (SELECT key, MAX(rev) AS top FROM log WHERE rev > ? AND rev <= ? GROUP BY key) n
         JOIN log o ON o.key = n.key AND o.rev < n.top)`,
    ),
    compactTombstones: db.prepare<[number, number]>("DELETE FROM log WHERE rev > ? AND rev <= ? AND deleted = 1"),
  };
}

// The SQLite layout of the storage and its prepared statements (prepared once per connection, reused for every call).
//
// `log` holds one row per revision (the value written, or a tombstone) and is the MVCC history: list at a
// revision, continue tokens and watch resume all read it. Compaction keeps, for every key, its newest row at or
// below the compacted revision, so `log` also holds each live value exactly once; `kv` only points at it.
import type Database from "better-sqlite3";

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (
  rev INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  value TEXT,
  create_rev INTEGER NOT NULL,
  ts INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', 1), ('revision', 1), ('compacted', 0);
`;

const KV_COLUMNS = "k.key AS key, l.value AS value, k.create_rev AS createRevision, k.mod_rev AS modRevision";
const LOG_COLUMNS = "rev, key, deleted, value, create_rev AS createRevision";

export interface KvRow {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
}

export interface LogRow {
  rev: number;
  key: string;
  deleted: number;
  value: string | null;
  createRevision: number;
}

export interface Statements {
  readonly meta: Database.Statement<[string], { value: number }>;
  readonly setMeta: Database.Statement<[number, string]>;
  readonly get: Database.Statement<[string], KvRow>;
  readonly listLatest: Database.Statement<[string, string, string, number], KvRow>;
  readonly countAfter: Database.Statement<[string, string, string], { n: number }>;
  readonly listAt: Database.Statement<[string, string, string, number, number], KvRow>;
  readonly events: Database.Statement<[number, string, string, number], LogRow>;
  readonly previous: Database.Statement<[string, number], LogRow>;
  readonly insertLog: Database.Statement<[number, string, number, string | null, number, number]>;
  readonly putKv: Database.Statement<[string, number, number]>;
  readonly deleteKv: Database.Statement<[string]>;
  readonly writtenBefore: Database.Statement<[number, number], { rev: number | null }>;
  readonly compactSuperseded: Database.Statement<[number, number]>;
  readonly compactTombstones: Database.Statement<[number, number]>;
}

export function prepareStatements(db: Database.Database): Statements {
  return {
    meta: db.prepare<[string], { value: number }>("SELECT value FROM meta WHERE name = ?"),
    setMeta: db.prepare<[number, string]>("UPDATE meta SET value = ? WHERE name = ?"),
    get: db.prepare<[string], KvRow>(`SELECT ${KV_COLUMNS} FROM kv k JOIN log l ON l.rev = k.mod_rev WHERE k.key = ?`),
    /** [from, end) strictly after startAfter ('' when none), limit -1 = all. */
    listLatest: db.prepare<[string, string, string, number], KvRow>(
      `SELECT ${KV_COLUMNS} FROM kv k JOIN log l ON l.rev = k.mod_rev WHERE k.key >= ? AND k.key > ? AND k.key < ? ORDER BY k.key LIMIT ?`,
    ),
    countAfter: db.prepare<[string, string, string], { n: number }>("SELECT COUNT(*) AS n FROM kv WHERE key >= ? AND key > ? AND key < ?"),
    /** The newest row of each key at or below a revision, tombstones left out. */
    listAt: db.prepare<[string, string, string, number, number], KvRow>(
      // Walks the (key, rev) index in key order, so rows stream out without a sort and LIMIT stops early.
      `SELECT l.key AS key, l.value AS value, l.create_rev AS createRevision, l.rev AS modRevision
       FROM log l INDEXED BY log_key_rev WHERE l.key >= ? AND l.key > ? AND l.key < ? AND l.deleted = 0
       AND l.rev = (SELECT MAX(x.rev) FROM log x WHERE x.key = l.key AND x.rev <= ?) ORDER BY l.key LIMIT ?`,
    ),
    events: db.prepare<[number, string, string, number], LogRow>(
      // `+key` keeps the planner on the rowid (revision) order instead of the key index plus a sort.
      `SELECT ${LOG_COLUMNS} FROM log WHERE rev > ? AND +key >= ? AND +key < ? ORDER BY rev LIMIT ?`,
    ),
    previous: db.prepare<[string, number], LogRow>(`SELECT ${LOG_COLUMNS} FROM log WHERE key = ? AND rev < ? ORDER BY rev DESC LIMIT 1`),
    insertLog: db.prepare<[number, string, number, string | null, number, number]>(
      "INSERT INTO log (rev, key, deleted, value, create_rev, ts) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    putKv: db.prepare<[string, number, number]>(
      "INSERT INTO kv (key, create_rev, mod_rev) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET mod_rev = excluded.mod_rev",
    ),
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

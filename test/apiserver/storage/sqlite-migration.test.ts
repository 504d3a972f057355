// A store written by the release before schema 2 (values as TEXT) opens, migrates to BLOB values, and keeps every
// object, revision and the history. The fixture was written by that release's openSqliteStorage (20 CSRs created,
// 7 updated, 4 deleted, a Secret, compacted to revision 5); the expectations are read from the file itself.
import { copyFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteByteStorage, openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { SCHEMA_VERSION } from "../../../src/apiserver/storage/sqlite-schema.js";
import { rejection } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/schema1.db", import.meta.url));
const dir = tempDir("pca-migrate-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const copy = (): string => {
  const path = join(dir, `store-${++n}.db`);
  copyFileSync(FIXTURE, path);
  return path;
};

interface Row { key: string; value: string; create_rev: number; mod_rev: number }

/** What the old release left: each live key with its value and revisions, the meta rows and every log row. */
function readOld(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    const meta = Object.fromEntries(db.prepare<[], { name: string; value: number }>("SELECT name, value FROM meta").all().map((r) => [r.name, r.value]));
    const live = db.prepare<[], Row>("SELECT k.key, l.value, k.create_rev, k.mod_rev FROM kv k JOIN log l ON l.rev = k.mod_rev ORDER BY k.key").all();
    const log = db.prepare<[], { rev: number; key: string; deleted: number; value: string | null; type: string }>("SELECT rev, key, deleted, value, typeof(value) AS type FROM log ORDER BY rev").all();
    return { meta, live, log };
  } finally {
    db.close();
  }
}

describe("sqlite schema migration", () => {
  it("opens a schema-1 store, converts the values to BLOBs and keeps every object, revision and history row", async () => {
    const path = copy();
    const old = readOld(path);
    expect(old.meta.schema).toBe(1);
    expect(old.live.length).toBe(17);
    expect(old.log.filter((r) => !r.deleted).every((r) => r.type === "text")).toBe(true);

    const s = await openSqliteStorage({ path });
    expect(await s.revision()).toBe(old.meta.revision);
    expect(await s.compactedRevision()).toBe(old.meta.compacted);
    const listed = await s.list("/");
    expect(listed.items.map((kv) => [kv.key, kv.value, kv.createRevision, kv.modRevision])).toEqual(old.live.map((r) => [r.key, r.value, r.create_rev, r.mod_rev]));
    expect(listed.items.some((kv) => kv.value.includes("ünïcødé ✓"))).toBe(true);
    // History after the compaction point: every retained event, deletes with the value they removed.
    const w: Array<[number, string, string]> = [];
    await new Promise<void>((resolve) => {
      const watch = s.watch("/", { fromRevision: old.meta.compacted!, onProgress: () => (watch.cancel(), resolve()) }, (ev) => w.push([ev.revision, ev.type, ev.key]));
    });
    expect(w).toEqual(old.log.filter((r) => r.rev > old.meta.compacted!).map((r) => [r.rev, r.deleted ? "DELETE" : "PUT", r.key]));
    const created = await s.create("/core/secrets/default/new", "{}");
    expect(created.modRevision).toBe(old.meta.revision! + 1);
    await s.close();

    const now = readOld(path);
    expect(now.meta.schema).toBe(SCHEMA_VERSION);
    expect(now.log.filter((r) => !r.deleted).every((r) => r.type === "blob")).toBe(true);
    expect(now.log.length).toBe(old.log.length + 1);
  });

  it("reads the migrated values as bytes too, and opens a migrated store again without change", async () => {
    const path = copy();
    const old = readOld(path);
    await (await openSqliteStorage({ path })).close();
    const bytes = await openSqliteByteStorage({ path });
    const kv = await bytes.get(old.live[0]!.key);
    expect(Buffer.from(kv!.value).toString("utf8")).toBe(old.live[0]!.value);
    await bytes.close();
  });

  it("opens a schema-2 store, adds the column of expiry times, and expires keys written from then on", async () => {
    const path = copy();
    await (await openSqliteStorage({ path })).close();
    // The layout schema 2 had: kv without the expires column.
    const db = new Database(path);
    db.exec("ALTER TABLE kv DROP COLUMN expires; UPDATE meta SET value = 2 WHERE name = 'schema';");
    db.close();
    const old = readOld(path);
    expect(old.meta.schema).toBe(2);
    const clock = new FakeClock();
    const s = await openSqliteStorage({ path, clock });
    expect((await s.list("/")).items).toHaveLength(old.live.length);
    await s.create("/core/events/default/e", "{}", 60);
    await clock.advance(60_500);
    expect(await s.get("/core/events/default/e")).toBeUndefined();
    expect((await s.list("/")).items).toHaveLength(old.live.length);
    await s.close();
    expect(readOld(path).meta.schema).toBe(SCHEMA_VERSION);
  });

  it("refuses a store written by a newer release", async () => {
    const path = copy();
    const db = new Database(path);
    db.prepare("UPDATE meta SET value = ? WHERE name = 'schema'").run(SCHEMA_VERSION + 1);
    db.close();
    const err = await rejection(openSqliteStorage({ path }), "STORAGE_UNAVAILABLE");
    expect(err.message).toBe(`storage schema ${SCHEMA_VERSION + 1} was written by a newer release (this one reads up to ${SCHEMA_VERSION}); run that release or restore a backup`);
  });
});

// The free space `storage defrag` checks before it starts: where SQLite puts its temporary copy, what each file system
// must hold (the pages in use for the log, and for the copy past the page cache), and the line that says what is missing.
import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { spaceShortfall, sqliteTempDir, volume, type Volume } from "../../src/cli/commands/defrag-space.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir("pca-defrag-space-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1048576;
const vol = (dir: string, free: number, device: number): Volume => ({ dir, free: free * MiB, device });

describe("sqliteTempDir", () => {
  it("takes $SQLITE_TMPDIR, then $TMPDIR, passing over what is missing or not a directory, as SQLite's unix VFS does", () => {
    const a = join(dir, "a");
    const b = join(dir, "b");
    mkdirSync(a);
    mkdirSync(b);
    const file = join(dir, "file");
    writeFileSync(file, "");
    expect(sqliteTempDir({ SQLITE_TMPDIR: a, TMPDIR: b })).toBe(a);
    expect(sqliteTempDir({ SQLITE_TMPDIR: join(dir, "missing"), TMPDIR: b })).toBe(b);
    expect(sqliteTempDir({ SQLITE_TMPDIR: file, TMPDIR: b })).toBe(b);
    const fallback = sqliteTempDir({});
    expect(["/var/tmp", "/usr/tmp", "/tmp", "."]).toContain(fallback);
    expect(statSync(fallback).isDirectory()).toBe(true);
  });
});

describe("volume", () => {
  it("reads the free bytes and the device of a directory's file system", () => {
    const v = volume(dir);
    expect(v.dir).toBe(dir);
    expect(v.free).toBeGreaterThan(0);
    expect(v.device).toBe(statSync(dir).dev);
  });
});

describe("spaceShortfall", () => {
  // 10 MiB in use past the page cache: the log 10 MiB and a sixty-fourth, the copy 10 MiB.
  const need = { log: 10 * MiB + Math.ceil((10 * MiB) / 64), temporary: 10 * MiB };

  it("asks one file system for the log and the copy together", () => {
    expect(spaceShortfall(need, vol("/data", 20.2, 1), vol("/tmp", 20.2, 1))).toBeUndefined();
    expect(spaceShortfall(need, vol("/data", 20, 1), vol("/tmp", 20, 1))).toBe(
      "not enough free disk space to defragment: it needs about 20.2 MiB on the file system of /data (the rebuilt database's log beside the store and SQLite's temporary copy in /tmp), 20.0 MiB free; free some space, or point SQLITE_TMPDIR at a directory with room for the copy",
    );
    // A store the page cache holds whole writes no temporary file.
    expect(spaceShortfall({ log: need.log, temporary: 0 }, vol("/data", 10.2, 1), vol("/tmp", 10.2, 1))).toBeUndefined();
    expect(spaceShortfall({ log: need.log, temporary: 0 }, vol("/data", 10, 1), vol("/tmp", 10, 1))).toBe(
      "not enough free disk space to defragment: it needs about 10.2 MiB on the file system of /data (the rebuilt database's log beside the store), 10.0 MiB free; free some space, or point SQLITE_TMPDIR at a directory with room for the copy",
    );
  });

  it("asks two file systems for one each, and names only the one short of room", () => {
    expect(spaceShortfall(need, vol("/data", 10.2, 1), vol("/tmp", 10, 2))).toBeUndefined();
    expect(spaceShortfall(need, vol("/data", 10.1, 1), vol("/tmp", 50, 2))).toBe(
      "not enough free disk space to defragment: it needs about 10.2 MiB for the rebuilt database's log in /data (10.1 MiB free); free some space, or point SQLITE_TMPDIR at a directory with room for the copy",
    );
    expect(spaceShortfall(need, vol("/data", 50, 1), vol("/tmp", 9.9, 2))).toBe(
      "not enough free disk space to defragment: it needs about 10.0 MiB for SQLite's temporary copy in /tmp (9.9 MiB free); free some space, or point SQLITE_TMPDIR at a directory with room for the copy",
    );
    expect(spaceShortfall(need, vol("/data", 1, 1), vol("/tmp", 1, 2))).toMatch(/10\.2 MiB for the rebuilt database's log in \/data \(1\.0 MiB free\) and 10\.0 MiB for SQLite's temporary copy in \/tmp \(1\.0 MiB free\)/);
  });
});

describe("SqliteStorage.defragmentSpace", () => {
  it("is the pages in use (free pages left out) for the log, and for the temporary copy only past the page cache", async () => {
    const path = join(dir, "space", "store.db");
    const s = await openSqliteStorage({ path, cacheSizeBytes: 16 * MiB });
    await Promise.all(Array.from({ length: 400 }, (_, i) => s.create(`/k/${i}`, JSON.stringify({ pad: "p".repeat(3000) }))));
    const full = s.defragmentSpace();
    await Promise.all(Array.from({ length: 200 }, (_, i) => s.delete(`/k/${i}`)));
    await s.compact(await s.revision());
    const half = s.defragmentSpace();
    // 400 values of ~3 KB: over a megabyte in use, the log a sixty-fourth more; the cache of 16 MiB holds it all.
    expect(full.log).toBeGreaterThan(1.2 * MiB);
    expect(full.temporary).toBe(0);
    expect(half.log).toBeLessThan(full.log * 0.7);
    await s.close();
    const small = await openSqliteStorage({ path, cacheSizeBytes: 65_536 });
    try {
      const space = small.defragmentSpace();
      expect(space.temporary).toBeGreaterThan(0);
      expect(space.log).toBe(space.temporary + Math.ceil(space.temporary / 64));
    } finally {
      await small.close();
    }
  });
});

// `platform-ca storage defrag` on the built CLI: a SQLite store whose deleted and compacted rows left free pages gets
// them back as a smaller file, every object and revision as before; an open store, etcd and a wrong directory refused
// with one line.
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { runCli } from "./fixtures.js";

const dir = tempDir("pca-defrag-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("platform-ca storage defrag", () => {
  it("gives the pages of deleted and compacted rows back, leaving every kept object and revision as it was", async () => {
    const dataDir = join(dir, "data");
    const path = join(dataDir, "store.db");
    const s = await openSqliteStorage({ path });
    for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => s.create(`/d/${i}-${j}`, JSON.stringify({ pad: "p".repeat(4000) }))));
    const kept = await s.create("/kept", '{"kept":true}');
    for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 100 }, (_, j) => s.delete(`/d/${i}-${j}`)));
    await s.compact(await s.revision());
    // A store a server holds (it has written, so SQLite holds its exclusive lock): refused, nothing changed.
    const held = await s.create("/held", "{}");
    const busy = await runCli(["storage", "defrag", "--data-dir", dataDir]);
    expect(busy.code).not.toBe(0);
    expect(busy.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^error: cannot open storage at .*store\.db: another process .* holds it \(SQLITE_BUSY\)/)]);
    expect(await s.get("/held")).toEqual(held);
    const revision = await s.revision();
    await s.close();
    const before = statSync(path).size;
    expect(before).toBeGreaterThan(8_000_000);

    const r = await runCli(["storage", "defrag", "--data-dir", dataDir]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const after = statSync(path).size;
    expect(after).toBeLessThan(before / 4);
    const mib = (bytes: number) => (bytes / 1048576).toFixed(1);
    expect(r.stdout).toBe(`defragmented ${path}: ${mib(before)} MiB → ${mib(after)} MiB\n`);

    const again = await openSqliteStorage({ path });
    try {
      expect(await again.get("/kept")).toEqual(kept);
      expect(await again.revision()).toBe(revision);
      expect((await again.list("/d/")).items).toEqual([]);
      // Writes go on from the same revision.
      expect((await again.create("/next", "{}")).modRevision).toBe(revision + 1);
    } finally {
      await again.close();
    }
  });

  it("refuses a directory without a store, a missing --data-dir and a store in etcd, each in one line", async () => {
    const none = await runCli(["storage", "defrag", "--data-dir", join(dir, "nothing")]);
    expect([none.code, none.stderr.trim()]).toEqual([2, `error: no store at ${join(dir, "nothing", "store.db")}: expected --data-dir to be a server's data directory`]);
    const missing = await runCli(["storage", "defrag"]);
    expect([missing.code, missing.stderr.trim()]).toEqual([2, "error: --data-dir is required: the data directory of the stopped server"]);
    const etcd = await runCli(["storage", "defrag", "--etcd-servers", "https://127.0.0.1:1"]);
    expect(etcd.code).not.toBe(0);
    expect(etcd.stderr.trim().split("\n")).toEqual(["error: a store in etcd is defragmented by etcd: `etcdctl defrag --endpoints …`, one member at a time"]);
  });
});

// `platform-ca storage defrag` on the built CLI: a SQLite store whose deleted and compacted rows left free pages gets
// them back as a smaller file, every object and revision as before; an open store, etcd, a wrong directory and too
// little free disk space (a small tmpfs, mounted in a namespace of the test's own) refused with one line.
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { runTool } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { CLI, REPO, runCli } from "./fixtures.js";

const dir = tempDir("pca-defrag-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * How `unshare` may give this process a mount namespace with a tmpfs in it: inside a user namespace of its own (no
 * privilege needed), or else as root with the right to mount (a CI container); undefined when neither works here.
 */
const MOUNT_NAMESPACE = [["--user", "--map-root-user", "--mount"], ["--mount"]].find((namespaces) => {
  const at = join(dir, "probe");
  mkdirSync(at, { recursive: true });
  return spawnSync("unshare", [...namespaces, "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', at], { stdio: "ignore" }).status === 0;
});

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

  // A tmpfs of `kib` KiB mounted at `at` for one shell script, in a mount namespace of the test's own (nothing left
  // mounted); the script gets `at` as $0 and `args` as $1….
  const onTmpfs = (kib: number, at: string, script: string, args: readonly string[], env: Record<string, string> = {}) =>
    runTool("unshare", [...MOUNT_NAMESPACE!, "sh", "-c", `mount -t tmpfs -o size=${kib}k tmpfs "$0" && ${script}`, at, ...args], { timeoutMs: 60_000, env });

  // Only where this process may make a mount namespace (a sandbox that forbids both ways cannot run it).
  it.runIf(MOUNT_NAMESPACE !== undefined)("refuses before it starts when the disk has no room for the rebuild, the store untouched; the library's rebuild that runs out of room is rolled back", async () => {
    const dataDir = join(dir, "no-room");
    const path = join(dataDir, "store.db");
    const s = await openSqliteStorage({ path });
    await Promise.all(Array.from({ length: 600 }, (_, i) => s.create(`/k/${i}`, JSON.stringify({ pad: "q".repeat(3000) }))));
    await Promise.all(Array.from({ length: 300 }, (_, i) => s.delete(`/k/${i}`)));
    await s.compact(await s.revision());
    const revision = await s.revision();
    await s.close();
    const mount = join(dir, "mount");
    mkdirSync(mount);

    // The store copied onto a file system with 64 KiB to spare: the rebuilt database's log (~1 MiB) has no room.
    const kib = Math.ceil(statSync(path).size / 1024) + 64;
    const refused = await onTmpfs(kib, mount, `cp "$1" "$0/store.db" && "$2" "$3" storage defrag --data-dir "$0"; code=$?; cmp -s "$1" "$0/store.db" && echo "exit $code, unchanged"`, [path, process.execPath, CLI]);
    expect(refused.stdout).toBe("exit 1, unchanged\n");
    expect(refused.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^error: not enough free disk space to defragment: it needs about 1\\.[0-9] MiB for the rebuilt database's log in ${mount} \\(0\\.[01] MiB free\\); free some space, or point SQLITE_TMPDIR at a directory with room for the copy$`)),
    ]);

    // Without the check (the library's defragment) and with a page cache too small to hold the copy, which then goes to
    // a temporary directory on a 1 MiB file system: SQLite runs out of room and rolls the rebuild back.
    const script = `import { openSqliteStorage } from ${JSON.stringify(join(REPO, "dist/src/apiserver/storage/sqlite.js"))};
      const s = await openSqliteStorage({ path: ${JSON.stringify(path)}, cacheSizeBytes: 65536 });
      try { s.defragment(); console.log("defragmented"); } catch (err) { console.log(err.code, err.message); } finally { await s.close(); }`;
    const full = await onTmpfs(1024, mount, `SQLITE_TMPDIR="$0" exec "$1" --input-type=module -e "$2"`, [process.execPath, script]);
    expect(full.stdout.trim()).toBe("STORAGE_UNAVAILABLE defragment failed, the store is as it was: database or disk is full (SQLITE_FULL)");
    const again = await openSqliteStorage({ path });
    try {
      expect(await again.revision()).toBe(revision);
      expect((await again.list("/k/")).items.map((kv) => kv.key).sort()).toEqual(Array.from({ length: 300 }, (_, i) => `/k/${i + 300}`).sort());
    } finally {
      await again.close();
    }
  });
});

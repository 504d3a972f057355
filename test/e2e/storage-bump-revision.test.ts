// `platform-ca storage bump-revision` on the built CLI: a SQLite data directory restored from a copy (docs/operations.md
// "Backups"), bumped past the writes made after the copy, served again by `platform-ca apiserver` (objects keep their
// resourceVersions, every earlier revision answers 410 to kubectl, a new write lands above); a running server, bad
// input and an etcd that does not answer each refused with one line.
import { cpSync, existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../fixtures/temp-dir.js";
import { runCli } from "../cli/fixtures.js";
import { ensureBuilt, kubectlFails, kubectlWith, objectVersions, resourceVersion, type Kubectl } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const work = tempDir("pca-bump-revision-");
let server: UpProcess | undefined;
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const bump = (...args: string[]) => runCli(["storage", "bump-revision", ...args]);
/** The store's revision: the resourceVersion of a list. */
const listRevision = (kubectl: Kubectl) => Number((JSON.parse(kubectl(["get", "--raw", "/api/v1/namespaces"])) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);

async function serve(dataDir: string): Promise<Kubectl> {
  server = await startUp({ command: "apiserver", dataDir });
  return kubectlWith(server.adminConfig);
}

async function stop(): Promise<void> {
  expect(await server!.stop()).toBe(0);
  server = undefined;
}

describe("platform-ca storage bump-revision", () => {
  it("moves a restored SQLite store past the lost writes: 410 for every earlier revision, objects unchanged", async () => {
    ensureBuilt();
    const dataDir = join(work, "data");
    const copy = join(work, "copy");
    let kubectl = await serve(dataDir);
    kubectl(["create", "namespace", "kept"]);
    kubectl(["create", "secret", "generic", "kept", "--namespace", "kept", "--from-literal=token=kept-value"]);
    const before = objectVersions(kubectl);
    const copyRevision = listRevision(kubectl);
    await stop();
    cpSync(dataDir, copy, { recursive: true });

    // Writes after the copy, which the restore loses; meanwhile the running server keeps the command out.
    kubectl = await serve(dataDir);
    kubectl(["create", "namespace", "after-copy"]);
    const lostRevision = resourceVersion(kubectl, ["namespace", "after-copy"]);
    kubectl(["create", "namespace", "after-copy-2"]);
    const lastRevision = listRevision(kubectl);
    const busy = await bump("--data-dir", dataDir, "--by", "5");
    expect(busy.code).not.toBe(0);
    expect(busy.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^error: cannot open storage at .*store\.db: another process .* holds it \(SQLITE_BUSY\)/)]);
    expect(listRevision(kubectl)).toBe(lastRevision);
    await stop();

    rmSync(dataDir, { recursive: true });
    cpSync(copy, dataDir, { recursive: true });
    const by = lastRevision - copyRevision;
    const fenced = await bump("--data-dir", dataDir, "--by", String(by));
    expect([fenced.code, fenced.stderr]).toEqual([0, ""]);
    const to = copyRevision + by + 1;
    expect(fenced.stdout).toBe(`moved the revision from ${copyRevision} to ${to} and compacted at ${to}\n`);

    kubectl = await serve(dataDir);
    expect(objectVersions(kubectl)).toEqual(before);
    expect(Buffer.from(kubectl(["get", "secret", "kept", "--namespace", "kept", "-o", "jsonpath={.data.token}"]), "base64").toString()).toBe("kept-value");
    expect(kubectlFails(kubectl, ["get", "namespace", "after-copy"])).toContain('namespaces "after-copy" not found');
    // A client that saw a lost write, or anything before the fence, is told to list again.
    for (const rv of [copyRevision, lostRevision, lastRevision]) {
      const watch = kubectl(["get", "--raw", `/api/v1/namespaces?watch=1&resourceVersion=${rv}&timeoutSeconds=5`]);
      expect(JSON.parse(watch.trim().split("\n")[0]!)).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
      expect(kubectlFails(kubectl, ["get", "--raw", `/api/v1/namespaces?resourceVersion=${rv}&resourceVersionMatch=Exact`])).toContain(`revision ${rv} has been compacted; the oldest available revision is ${to}`);
    }
    kubectl(["create", "namespace", "after-restore"]);
    expect(resourceVersion(kubectl, ["namespace", "after-restore"])).toBeGreaterThan(to);
    await stop();
  }, 120_000);

  it("refuses bad input with one line and leaves the store as it was", async () => {
    const dataDir = join(work, "data");
    expect(existsSync(join(dataDir, "store.db"))).toBe(true);
    const store = readFileSync(join(dataDir, "store.db"));
    const cases: Array<[string[], string]> = [
      [["--data-dir", dataDir], "error: --by is required: at least the number of writes made after the backup"],
      [["--data-dir", dataDir, "--by", "0"], 'error: expected --by to be a positive whole number, got "0"'],
      [["--data-dir", dataDir, "--by", "1e3"], 'error: expected --by to be a positive whole number, got "1e3"'],
      [["--data-dir", dataDir, "--by", "-5"], 'error: expected --by to be a positive whole number, got "-5"'],
      [["--data-dir", dataDir, "--by", "9007199254740993"], 'error: expected --by to be a positive whole number, got "9007199254740993"'],
      [["--by", "5"], "error: --data-dir is required (or --etcd-servers for a store in etcd)"],
      [["--data-dir", join(work, "missing"), "--by", "5"], `error: no store at ${join(work, "missing", "store.db")}: expected --data-dir to be a server's data directory`],
      [["--data-dir", dataDir, "--by", "5", "--etcd-servers", "http://127.0.0.1:2379"], "error: --data-dir names a SQLite store; with --etcd-servers the revision of etcd is moved, and the data directory is not read"],
      [["--data-dir", dataDir, "--by", String(Number.MAX_SAFE_INTEGER)], expect.stringMatching(/^error: expected `by` a whole number from 1 to \d+, got 9007199254740991$/) as unknown as string],
    ];
    for (const [args, line] of cases) {
      const r = await bump(...args);
      expect(r.code, args.join(" ")).not.toBe(0);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toEqual([line]);
      expect(r.stdout).toBe("");
    }
    expect(existsSync(join(work, "missing"))).toBe(false);
    expect(readFileSync(join(dataDir, "store.db")).equals(store)).toBe(true);
  });

  it("fails with one line when no etcd member answers", async () => {
    // Port 1 (tcpmux) is refused here: a port freed for the test could be taken by an etcd another test starts.
    const port = 1;
    const r = await bump("--by", "10", "--etcd-servers", `http://127.0.0.1:${port}`);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^error: etcd Range failed: .*(ECONNREFUSED|No connection established)/)]);
    expect(r.stdout).toBe("");
  }, 30_000);
});

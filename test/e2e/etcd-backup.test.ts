// docs/operations.md "Backup and restore of etcd", its commands run as written on loopback (random ports, temp dirs):
// `apiserver` on a TLS etcd, objects written with kubectl, the documented `snapshot save`, everything stopped, the
// documented `snapshot restore` into a new member and `platform-ca storage bump-revision`, a new `apiserver` on it and
// on a copy of the data directory. Every object is back with its resourceVersion, a write after the snapshot is gone
// and a watch or exact list from its resourceVersion answers 410, a write works, and a watch from the restored list
// sees it.
import { execFileSync, spawn } from "node:child_process";
import { cpSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newCsrObject } from "../fixtures/csr.js";
import { shellBlocks } from "../fixtures/doc-blocks.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { builtCommands, ensureBuilt, kubectlFails, kubectlWith, objectVersions, resourceVersion } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const work = tempDir("pca-etcd-backup-");
let etcd: EtcdCluster | undefined;
let server: UpProcess | undefined;
afterAll(async () => {
  await server?.stop();
  await etcd?.stop();
});

const etcdFlags = (c: EtcdCluster) => ["--etcd-servers", c.endpoints.join(","), "--etcd-cafile", c.tls!.caFile, "--etcd-certfile", c.tls!.certFile, "--etcd-keyfile", c.tls!.keyFile];

/** The cluster's client TLS files where the recipe names them: ca.crt, client.crt and client.key. */
function clientFiles(cluster: EtcdCluster): void {
  const tls = cluster.tls!;
  for (const [name, target] of [["ca.crt", tls.caFile], ["client.crt", tls.certFile], ["client.key", tls.keyFile]] as const) {
    rmSync(join(work, name), { force: true });
    symlinkSync(target, join(work, name));
  }
}

/** The revision of the cluster's first member. */
function revision(cluster: EtcdCluster): number {
  const tls = cluster.tls!;
  const out = execFileSync("etcdctl", ["--endpoints", cluster.endpoints[0]!, "--cacert", tls.caFile, "--cert", tls.certFile, "--key", tls.keyFile, "endpoint", "status", "-w", "json"], { env: { ...process.env, ETCDCTL_API: "3" }, encoding: "utf8" });
  return (JSON.parse(out) as Array<{ Status: { header: { revision: number } } }>)[0]!.Status.header.revision;
}

/** `block` with the documentation's example values replaced; each must be there, so a changed recipe fails here. */
function substitute(block: string, values: ReadonlyArray<readonly [RegExp, string]>): string {
  return values.reduce((text, [from, to]) => {
    expect(text).toMatch(from);
    return text.replace(from, to);
  }, block);
}

/**
 * A recipe block run by bash in the work directory, where ca.crt, client.crt and client.key are etcd's client files
 * and `platform-ca` is the built one.
 */
function runBlock(script: string, env: Readonly<Record<string, string>> = {}): string {
  const path = `${builtCommands(join(work, "bin"))}:${process.env["PATH"]}`;
  return execFileSync("bash", ["-euo", "pipefail", "-c", script], { cwd: work, env: { ...process.env, PATH: path, ...env }, encoding: "utf8", timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] });
}

describe("docs/operations.md: Backup and restore of etcd", () => {
  it("restores every object with its resourceVersion; writes and watches work on the restored store", async () => {
    ensureBuilt();
    const [save, restore, bump] = shellBlocks("docs/operations.md", "### Backup and restore of etcd");
    etcd = await startEtcd({ tls: true });
    clientFiles(etcd);
    server = await startUp({ command: "apiserver", args: etcdFlags(etcd) });
    let kubectl = kubectlWith(server.adminConfig);
    kubectl(["create", "namespace", "backup-a"]);
    kubectl(["create", "namespace", "backup-b"]);
    kubectl(["create", "secret", "generic", "kept", "--namespace", "backup-a", "--from-literal=token=kept-value"]);
    kubectl(["create", "-f", "-"], JSON.stringify(await newCsrObject({ name: "backup-csr", cn: "alice" })));
    const before = objectVersions(kubectl);
    expect(before).toEqual(expect.arrayContaining([expect.stringMatching(/^Namespace\/\/backup-a=\d+$/), expect.stringMatching(/^Secret\/backup-a\/kept=\d+$/), expect.stringMatching(/^CertificateSigningRequest\/\/backup-csr=\d+$/)]));

    // The backup, as documented, while everything runs; then a write the snapshot does not have.
    const status = runBlock(substitute(save!, [[/https:\/\/10\.0\.0\.1:2379/, etcd.endpoints[0]!]]));
    expect(status).toMatch(/\|\s*HASH\s*\|\s*REVISION\s*\|\s*TOTAL KEYS\s*\|\s*TOTAL SIZE\s*\|/);
    const snapshotRevision = Number(/^\|\s*[0-9a-f]+\s*\|\s*(\d+)\s*\|/m.exec(status)![1]);
    expect(snapshotRevision).toBeGreaterThanOrEqual(Math.max(...before.map((o) => Number(o.split("=")[1]))));
    kubectl(["create", "namespace", "after-snapshot"]);
    const lostRevision = resourceVersion(kubectl, ["namespace", "after-snapshot"]);
    expect(lostRevision).toBeGreaterThan(snapshotRevision);

    // Disaster: every API server and member stopped, the etcd data gone; the data directory restored from its copy.
    const backedUp = server.dataDir;
    expect(await server.stop()).toBe(0);
    server = undefined;
    const lastRevision = revision(etcd);
    await etcd.stop();
    etcd = undefined;
    const dataDir = join(work, "data-restored");
    cpSync(backedUp, dataDir, { recursive: true });
    const snapshot = readdirSync(work).find((f) => /^platform-ca-.*\.db$/.test(f))!;
    etcd = await startEtcd({
      tls: true,
      prepare: (member) =>
        void runBlock(
          substitute(restore!, [
            [/--name m0/, `--name ${member.name}`],
            [/--data-dir \/var\/lib\/etcd-restored/, `--data-dir ${member.dataDir}`],
            [/--initial-cluster \S+/, `--initial-cluster ${member.initialCluster}`],
            [/--initial-advertise-peer-urls \S+/, `--initial-advertise-peer-urls ${member.peerUrl}`],
          ]),
          { SNAPSHOT: snapshot },
        ),
    });
    // Past every revision handed out before (sized as documented: the old cluster's last revision minus the snapshot's).
    clientFiles(etcd);
    const bumped = runBlock(substitute(bump!, [[/BUMP=10000/, `BUMP=${lastRevision - snapshotRevision}`], [/https:\/\/10\.0\.0\.1:2379/, etcd.endpoints[0]!]]));
    expect(bumped).toBe(`moved the revision from ${snapshotRevision} to ${lastRevision + 1} and compacted at ${lastRevision + 1}\n`);
    expect(revision(etcd)).toBe(lastRevision + 1);
    server = await startUp({ command: "apiserver", dataDir, args: etcdFlags(etcd) });
    kubectl = kubectlWith(server.adminConfig);

    expect(objectVersions(kubectl)).toEqual(before);
    expect(Buffer.from(kubectl(["get", "secret", "kept", "--namespace", "backup-a", "-o", "jsonpath={.data.token}"]), "base64").toString()).toBe("kept-value");
    expect(kubectlFails(kubectl, ["get", "namespace", "after-snapshot"])).toContain('namespaces "after-snapshot" not found');
    // A client that saw the lost write is told to list again rather than resumed past writes it never saw.
    const stale = kubectl(["get", "--raw", `/api/v1/namespaces?watch=1&resourceVersion=${lostRevision}&timeoutSeconds=5`]);
    expect(JSON.parse(stale.trim().split("\n")[0]!)).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
    for (const rv of [snapshotRevision, lostRevision, lastRevision]) {
      expect(kubectlFails(kubectl, ["get", "--raw", `/api/v1/namespaces?resourceVersion=${rv}&resourceVersionMatch=Exact`])).toContain(`(Expired): The resourceVersion for the provided list is too old (relist without resourceVersion): revision ${rv} has been compacted; the oldest available revision is ${lastRevision + 1}`);
    }

    // A watch from the restored list (kubectl lists, then watches from the list's resourceVersion) sees a new write.
    const watch = spawn("kubectl", [...kubectl.baseArgs, "get", "namespaces", "--watch", "-o", "name"], { stdio: ["ignore", "pipe", "pipe"] });
    let watched = "";
    watch.stdout.on("data", (d) => (watched += d));
    try {
      await until(() => watched.includes("namespace/backup-b"), "the watch's initial list", 1000);
      kubectl(["create", "namespace", "after-restore"]);
      await until(() => watched.includes("namespace/after-restore"), "the watch to see the write after the restore", 1000);
    } finally {
      watch.kill();
    }
    // Not a revision handed out before the restore: no client can take this write for one it has seen.
    expect(resourceVersion(kubectl, ["namespace", "after-restore"])).toBeGreaterThan(lastRevision);
  }, 180_000);
});

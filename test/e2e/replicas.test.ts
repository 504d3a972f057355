// Two `platform-ca apiserver` replicas and one controller manager on a three-member etcd: started at once on one data
// directory, a CSR burst split across both, one replica and one etcd member killed (-9) mid-burst. Every acknowledged
// request is issued exactly once and an informer on the survivor holds every request. REPLICA_BURST sets the size (default 200).
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { isIssued } from "../../src/api/conditions.js";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import { Informer } from "../../src/controller/informer.js";
import { isPlatformError } from "../../src/errors.js";
import type { ControllerResources } from "../../src/controller/controllers/controller-set.js";
import { opsGet, sample, startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { nodeClientCsr } from "../controller/controllers/harness.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { until } from "../fixtures/wait.js";
import { inParallel } from "../fixtures/parallel.js";
import { ensureBuilt } from "./apiserver-process.js";

const COUNT = Number(process.env["REPLICA_BURST"] ?? 200);
const SIGNED = 'platform_ca_csr_signed_total{signer="platform.io/apiserver-client-nodeagent"}';

let etcd: EtcdCluster | undefined;
const clusters: Cluster[] = [];
afterAll(async () => {
  for (const c of clusters) await c.stop().catch(() => undefined);
  await etcd?.stop();
});

/** The last lines each process printed (stderr, then stdout), for a failure's message. */
function outputTails(procs: Readonly<Record<string, { stdout(): string; stderr(): string }>>, lines = 30): string {
  const tail = (text: string) => text.trimEnd().split("\n").slice(-lines).join("\n");
  return Object.entries(procs).map(([name, p]) => `--- ${name} (stderr)\n${tail(p.stderr())}\n--- ${name} (stdout)\n${tail(p.stdout())}`).join("\n");
}

/** Creates through `first`, then alternately through `other` while attempts fail (a replica is gone); returns once acknowledged. */
async function create(first: ControllerResources, other: ControllerResources, name: string, csr: Awaited<ReturnType<typeof nodeClientCsr>>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    try {
      await (attempt % 2 === 0 ? first : other).csrs.create(structuredClone(csr));
      return;
    } catch (err) {
      // An earlier attempt that landed although its answer was lost: acknowledged now.
      if (isPlatformError(err, "ALREADY_EXISTS")) return;
      if (Date.now() > deadline) throw new Error(`creating ${name}: ${String(err)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe("API server replicas on etcd", () => {
  it(`issue a ${COUNT}-request burst split across two replicas exactly once through a replica and an etcd member killed mid-burst`, async () => {
    ensureBuilt();
    etcd = await startEtcd({ members: 3 });
    const urls = (order: number[]) => ["--etcd-servers", order.map((i) => etcd!.members[i]!.clientUrl).join(",")];
    const dir = mkdtempSync(join(tmpdir(), "platform-ca-replicas-"));
    // Started at once on one data directory: one cluster CA, one set of RBAC defaults and namespaces.
    const [a, b] = await Promise.all([startCluster({ dir, apiserverArgs: urls([0, 1, 2]) }), startCluster({ dir, apiserverArgs: urls([1, 2, 0]) })]);
    clusters.push(a, b);
    // The controller manager talks to replica A, the survivor.
    const conf = parseYaml(readFileSync(a.adminConfig, "utf8"));
    conf.clusters[0].cluster.server = a.address;
    const aConfig = join(dir, "replica-a.conf");
    writeFileSync(aConfig, toYaml(conf), { mode: 0o600 });
    const controller = await a.startController(["--platformconfig", aConfig, "--leader-elect=true", "--kube-api-qps", "500", "--kube-api-burst", "500"]);

    // An informer on the survivor from before the burst. Its watch may be told to list again (410) when the
    // replica's watch cache re-initializes after its etcd member dies, as upstream's does; the informer recovers.
    const seen = new Set<string>();
    const informer = new Informer<CertificateSigningRequest>({ listWatcher: a.admin.csrs, name: "replica-a-watcher" });
    informer.addHandlers({ onAdd: (csr) => void seen.add(csr.metadata.name!), onUpdate: (_old, csr) => void seen.add(csr.metadata.name!) });
    informer.start();
    await informer.waitForSync();

    const names = Array.from({ length: COUNT }, (_, i) => `replica-${i}`);
    const csrs = await Promise.all(names.map((n) => nodeClientCsr(a.names, n, { name: n })));
    const burstAt = Date.now();
    let done = 0;
    let killed: Promise<unknown> | undefined;
    await inParallel(names, 8, async (name, i, caller) => {
      const [first, other] = caller % 2 ? [a.bootstrapper, b.bootstrapper] : [b.bootstrapper, a.bootstrapper];
      await create(first, other, name, csrs[i]!);
      if (++done === Math.floor(COUNT / 3)) killed = Promise.all([b.apiserver.stop("SIGKILL"), etcd!.members[0]!.stop("SIGKILL")]);
    });
    await killed;
    const acknowledgedAt = Date.now();

    try {
      // A time budget (6 s, and 30 ms per request), polled every 100 ms: a LIST of thousands is not `until`'s 10 ms check.
      const deadline = Date.now() + 6000 + COUNT * 30;
      for (;;) {
        const issued = new Set((await a.admin.csrs.list()).items.filter(isIssued).map((x) => x.metadata.name));
        if (names.every((n) => issued.has(n))) break;
        if (Date.now() > deadline) throw new Error(`gave up waiting for ${COUNT} requests to be issued`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } catch (err) {
      // A stall shows only in the processes' own words: the end of each one's output goes with the failure.
      const took = `the burst was acknowledged in ${((acknowledgedAt - burstAt) / 1000).toFixed(1)} s`;
      throw new Error(`${(err as Error).message}; ${took}\n${outputTails({ "replica A": a.apiserver, "replica B": b.apiserver, controller })}`, { cause: err });
    }
    // Exactly once: the controller signed as many certificates as there are requests, and no request has two
    // CertificateIssued events.
    let metrics = "";
    for (let i = 0; i < 50 && sample(metrics, SIGNED) < COUNT; i++) {
      metrics = (await opsGet(aConfig, `${controller.ops}/metrics`)).text;
      if (sample(metrics, SIGNED) < COUNT) await new Promise((r) => setTimeout(r, 200));
    }
    expect(sample(metrics, SIGNED)).toBe(COUNT);
    process.stdout.write(`${COUNT} requests: burst ${((acknowledgedAt - burstAt) / 1000).toFixed(1)} s, all issued ${((Date.now() - acknowledgedAt) / 1000).toFixed(1)} s later\n`);
    const issuedEvents = new Map<string, number>();
    for (const e of (await a.admin.events.list({ namespace: "default" })).items) {
      if (e.reason === "CertificateIssued") issuedEvents.set(e.regarding?.name ?? "", (issuedEvents.get(e.regarding?.name ?? "") ?? 0) + (e.series?.count ?? 1));
    }
    expect([...issuedEvents.values()].filter((n) => n > 1)).toEqual([]);
    await until(() => (names.every((n) => seen.has(n) && informer.get(n) !== undefined) ? true : undefined), "the survivor's informer to hold every request", 1000);
    await informer.stop();
  }, Math.max(300_000, COUNT * 1000));

  it("elects one controller manager among two `up` replicas on etcd through the Lease, collects garbage and fills token Secrets across them, and the other takes over when its replica is killed", async () => {
    ensureBuilt();
    const single = await startEtcd();
    try {
      const args = ["--etcd-servers", single.endpoints[0]!];
      // Data directories of their own (each `up` talks to its own server through its admin.conf), the second given the
      // first's cluster CA and ServiceAccount key, as docs/operations.md "Replicas" describes.
      const first = await startCluster({ mode: "up", apiserverArgs: args });
      clusters.push(first);
      const dir = mkdtempSync(join(tmpdir(), "platform-ca-replicas-"));
      mkdirSync(join(dir, "data", "pki"), { recursive: true, mode: 0o700 });
      for (const file of ["ca.crt", "ca.key", "sa-signing-key.pem", "sa-signing-key.pub"]) copyFileSync(join(first.dataDir, "pki", file), join(dir, "data", "pki", file));
      const second = await startCluster({ mode: "up", dir, apiserverArgs: args });
      clusters.push(second);
      const replicas = [first, second];
      const leading = async (c: Cluster) => sample((await opsGet(c.adminConfig, `${c.controllersOps}/metrics`).catch(() => ({ text: "" }))).text, "platform_ca_leader") === 1;
      const leader = await until(async () => {
        const states = await Promise.all(replicas.map(leading));
        return states.filter(Boolean).length === 1 ? replicas[states.indexOf(true)] : undefined;
      }, "exactly one leader", 1000);
      const other = replicas.find((c) => c !== leader)!;
      // One object, one resourceVersion, whichever replica answers (a signer no controller acts on: it stays as created).
      const created = await leader!.admin.csrs.create(await nodeClientCsr(leader!.names, "lease-1", { name: "lease-1", signerName: "example.com/nobody" }));
      expect((await other.admin.csrs.get("lease-1")).metadata.resourceVersion).toBe(created.metadata.resourceVersion);
      // The garbage collector and the token controller across replicas: a dependent made through one replica goes with
      // its owner deleted through the other; a token Secret made through the other is filled by the leader's
      // controllers, and its token authenticates on both replicas (one ServiceAccount key) until the Secret goes.
      const owner = await leader!.admin.configMaps.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gc-owner" } }, { namespace: "default" });
      const ownerRef = { apiVersion: "v1", kind: "ConfigMap", name: "gc-owner", uid: owner.metadata.uid! };
      await other.admin.configMaps.create({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "gc-dependent", ownerReferences: [ownerRef] } }, { namespace: "default" });
      await other.admin.configMaps.delete("gc-owner", { namespace: "default" });
      const gone = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => (isPlatformError(err, "NOT_FOUND") ? true : undefined));
      await until(() => gone(leader!.admin.configMaps.get("gc-dependent", { namespace: "default" })), "the dependent deleted with its owner", 6000);
      await other.admin.serviceAccounts.create({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "robot" } }, { namespace: "default" });
      const tokenSecret = { apiVersion: "v1", kind: "Secret", type: "platform.io/service-account-token", metadata: { name: "robot-token", annotations: { "platform.io/service-account.name": "robot" } } };
      await other.admin.secrets.create(tokenSecret, { namespace: "default" });
      const token = await until(async () => {
        const data = (await leader!.admin.secrets.get("robot-token", { namespace: "default" })).data;
        return data?.token ? Buffer.from(data.token, "base64").toString() : undefined;
      }, "the token Secret filled", 6000);
      const asRobot = replicas.map((c) => c.withToken(token));
      try {
        // Authenticated as the ServiceAccount on both (then refused: it may not list requests).
        for (const r of asRobot) await expect(r.resources.csrs.list()).rejects.toSatisfy((e) => isPlatformError(e, "FORBIDDEN") && /system:serviceaccount:default:robot/.test(e.message));
        await leader!.admin.secrets.delete("robot-token", { namespace: "default" });
        for (const r of asRobot) await expect(r.resources.csrs.list()).rejects.toSatisfy((e) => isPlatformError(e, "UNAUTHORIZED"));
      } finally {
        for (const r of asRobot) r.close();
      }
      await leader!.apiserver.stop("SIGKILL");
      await until(() => leading(other).then((ok) => ok || undefined), "the other replica's controllers to lead", 6000);
      await other.admin.csrs.create(await nodeClientCsr(other.names, "lease-2", { name: "lease-2" }));
      await until(async () => (isIssued(await other.admin.csrs.get("lease-2")) ? true : undefined), "the request to be issued by the new leader", 3000);
    } finally {
      await single.stop();
    }
  }, 120_000);
});

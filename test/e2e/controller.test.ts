// End to end with real processes: `platform-ca apiserver` (HTTPS, admin.conf) + `platform-ca controller`, openssl on both ends.
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCondition, isIssued } from "../../src/api/conditions.js";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import type { ClusterTrustBundle } from "../../src/api/types/trust-bundle.js";
import { groupNames } from "../../src/api/group.js";
import { runSecureServer } from "../../src/apiserver/bootstrap/run-server.js";
import { controllerComponent } from "../../src/cli/commands/controller.js";
import { restConfigFromConnection } from "../../src/client/connection-config.js";
import { createClient } from "../../src/client/rest-client.js";
import { controllerResources } from "../../src/controller/controllers/controller-set.js";
import { isPlatformError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { createPersistently, opsGet, sample, startCluster, type Cluster, type ControllerProc } from "../controller/controllers/cluster.js";
import { nodeClientCsr } from "../controller/controllers/harness.js";
import { csrObject } from "../fixtures/csr.js";
import { ensureBuilt, kubectlWith } from "./apiserver-process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { inParallel } from "../fixtures/parallel.js";

const work = tempDir("controller-e2e-");

/** A PKCS#10 request made by openssl: a fresh P-256 key, the subject given in openssl's /K=V form. */
function opensslCsr(name: string, subject: string, extra: readonly string[] = []): string {
  const out = join(work, `${name}.csr`);
  execFileSync("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", join(work, `${name}.key`), "-subj", subject, ...extra, "-out", out], { stdio: "ignore" });
  return readFileSync(out, "latin1");
}

const settled = (c: Cluster, name: string, what: (csr: CertificateSigningRequest) => boolean, tries = 1000) =>
  until(async () => ((csr) => (what(csr) ? csr : undefined))(await c.admin.csrs.get(name)), `${name} to settle`, tries);
const issued = (c: Cluster, name: string) => settled(c, name, isIssued);

async function decide(c: Cluster, name: string, type: "Approved" | "Denied"): Promise<void> {
  const csr = await c.admin.csrs.get(name);
  const conditions = [...(csr.status?.conditions ?? []), { type, status: "True" as const, reason: "E2E", message: `${type} by the test` }];
  await c.admin.csrs.update({ ...csr, status: { ...csr.status, conditions } }, { subresource: "approval" });
}

function openssl(args: readonly string[]): string {
  return execFileSync("openssl", args, { encoding: "utf8" });
}

/** The leaf of status.certificate in a file, for openssl. */
function leafFile(csr: CertificateSigningRequest, name: string): string {
  const path = join(work, `${name}.crt`);
  writeFileSync(path, Buffer.from(csr.status!.certificate!, "base64").toString("latin1"));
  return path;
}

function lifetimeSeconds(certFile: string): number {
  const text = openssl(["x509", "-in", certFile, "-noout", "-startdate", "-enddate"]);
  const start = Date.parse(/notBefore=(.*)/.exec(text)![1]!);
  const end = Date.parse(/notAfter=(.*)/.exec(text)![1]!);
  return (end - start) / 1000;
}

async function bundleOf(c: Cluster, signerName: string): Promise<ClusterTrustBundle> {
  return until(async () => {
    const mine = (await c.admin.trustBundles.list()).items.filter((b) => b.spec.signerName === signerName);
    return mine.length === 1 ? mine[0] : undefined;
  }, `the bundle of ${signerName}`);
}

/** A controller configuration file whose PlatformCAExtensions.Approver block is `lines` (YAML, indented under it). */
function approverConfig(file: string, lines: readonly string[]): string {
  const path = join(work, file);
  const head = ["apiVersion: platformcontrollermanager.config.platform.io/v1alpha1", "kind: PlatformControllerManagerConfiguration", "PlatformCAExtensions:", "  Approver:"];
  writeFileSync(path, [...head, ...lines.map((l) => `    ${l}`), ""].join("\n"));
  return path;
}

beforeAll(() => ensureBuilt(), 300_000);

describe("platform-ca controller beside platform-ca apiserver", () => {
  let c: Cluster;
  let controller: ControllerProc;
  beforeAll(async () => {
    c = await startCluster();
    controller = await c.startController(["--leader-elect=false", "--cluster-signing-duration", "2h"]);
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  it("approves and issues a node agent's openssl request; openssl verifies it against the published bundle", async () => {
    await c.bootstrapper.csrs.create(csrObject({ names: c.names, name: "e2e-node-1", request: opensslCsr("node-1", "/O=system:nodes/CN=system:node:e2e-node-1"), expirationSeconds: 3600 }));
    const csr = await issued(c, "e2e-node-1");
    expect(findCondition(csr, "Approved")).toMatchObject({ reason: "AutoApproved" });
    expect(csr.spec.username).toBe("system:bootstrap:e2e001");
    const bundle = await bundleOf(c, c.names.signers.nodeagentClient);
    const bundleFile = join(work, "bundle.pem");
    writeFileSync(bundleFile, bundle.spec.trustBundle);
    const cert = leafFile(csr, "node-1");
    expect(openssl(["verify", "-CAfile", bundleFile, cert]).trim()).toBe(`${cert}: OK`);
    expect(openssl(["x509", "-in", cert, "-noout", "-subject"])).toMatch(/O\s*=\s*system:nodes, CN\s*=\s*system:node:e2e-node-1/);
    // One hour asked for, backdated five minutes.
    expect(lifetimeSeconds(cert)).toBe(3600 + 300);
  });

  it("holds a longer request to the cluster maximum", async () => {
    await c.bootstrapper.csrs.create(csrObject({ names: c.names, name: "e2e-node-2", request: opensslCsr("node-2", "/O=system:nodes/CN=system:node:e2e-node-2"), expirationSeconds: 86_400 }));
    const csr = await issued(c, "e2e-node-2");
    expect(lifetimeSeconds(leafFile(csr, "node-2"))).toBe(2 * 3600 + 300);
  });

  it("never issues a denied request, and marks a request the signer refuses Failed", async () => {
    // The API-server client signer is never auto-approved, so a person decides these.
    const client = c.names.signers.apiserverClient;
    await c.admin.csrs.create(csrObject({ names: c.names, name: "e2e-denied", request: opensslCsr("denied", "/CN=e2e-user"), signerName: client }));
    await decide(c, "e2e-denied", "Denied");
    await c.admin.csrs.create(csrObject({ names: c.names, name: "e2e-refused", request: opensslCsr("refused", "/CN=e2e-user"), signerName: client, usages: ["digital signature", "server auth"] }));
    await decide(c, "e2e-refused", "Approved");
    const refused = await settled(c, "e2e-refused", (x) => findCondition(x, "Failed") !== undefined);
    expect(findCondition(refused, "Failed")).toMatchObject({ reason: "SignerValidationFailure" });
    expect(findCondition(refused, "Failed")?.message).toMatch(/usage "server auth" is not allowed/);
    // A later request is issued, so the controller has passed the denied one by.
    await c.admin.csrs.create(csrObject({ names: c.names, name: "e2e-later", request: opensslCsr("later", "/CN=e2e-user"), signerName: client }));
    await decide(c, "e2e-later", "Approved");
    await issued(c, "e2e-later");
    const denied = await c.admin.csrs.get("e2e-denied");
    expect(denied.status?.certificate).toBeUndefined();
    expect(findCondition(denied, "Failed")).toBeUndefined();
  });

  it("brings a deleted trust bundle back", async () => {
    const before = await bundleOf(c, c.names.signers.nodeagentServing);
    await c.admin.trustBundles.delete(before.metadata.name!);
    const after = await until(async () => {
      const b = await c.admin.trustBundles.get(before.metadata.name!).catch((err: unknown) => (isPlatformError(err, "NOT_FOUND") ? undefined : Promise.reject(err)));
      return b && b.metadata.uid !== before.metadata.uid ? b : undefined;
    }, "the bundle to come back");
    expect(after.spec.trustBundle).toBe(before.spec.trustBundle);
    // The counter moves when the create's answer reaches the controller, which may be after the bundle is readable.
    const created = 'platform_ca_trust_bundle_syncs_total{signer="platform.io/nodeagent-serving",result="created"}';
    const counted = await until(async () => {
      const n = sample((await opsGet(c.adminConfig, `${controller.ops}/metrics`)).text, created);
      return n >= 2 ? n : undefined;
    }, "the re-creation to be counted");
    expect(counted).toBe(2);
  });
});

describe("the controllers inside platform-ca up", () => {
  it("run beside the secure server as its administrator and issue a node agent's request", async () => {
    const dataDir = tempDir("controller-up-");
    const stop = new AbortController();
    const running = runSecureServer({ dataDir, listen: { host: "127.0.0.1", port: 0 }, logger: silentLogger(), signal: stop.signal, write: () => {}, banner: "up", components: [controllerComponent] });
    try {
      const rest = await until(() => restConfigFromConnection({ kubeconfig: join(dataDir, "admin.conf") }).catch(() => undefined), "admin.conf");
      const clients = [createClient(rest), createClient({ ...rest, impersonate: { user: "system:bootstrap:up001", groups: ["system:bootstrappers"] } })];
      stop.signal.addEventListener("abort", () => clients.forEach((c) => c.close()));
      const [admin, node] = clients.map((c) => controllerResources(c, groupNames())) as [ReturnType<typeof controllerResources>, ReturnType<typeof controllerResources>];
      // The administrator impersonates a bootstrapping node agent, so the request carries it as requester.
      await createPersistently(node, await nodeClientCsr(groupNames(), "up-1"));
      const csr = await until(async () => ((x) => (isIssued(x) ? x : undefined))(await admin.csrs.get("up-1-client")), "the request to be issued");
      expect(findCondition(csr, "Approved")?.reason).toBe("AutoApproved");
      expect(csr.spec.username).toBe("system:bootstrap:up001");
    } finally {
      stop.abort();
      await running;
    }
  }, 60_000);
});

/** `count` node-agent client requests created by `parallel` clients, as fast as they go. */
async function burst(c: Cluster, prefix: string, count: number, parallel = 8, onCreated?: (n: number) => Promise<void> | void): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  let created = 0;
  await inParallel(names, parallel, async (node) => {
    await createPersistently(c.bootstrapper, await nodeClientCsr(c.names, node, { name: node }));
    await onCreated?.(++created);
  });
  return names;
}

async function allIssued(c: Cluster, names: readonly string[], tries = 1500): Promise<void> {
  await until(async () => {
    const list = await c.admin.csrs.list();
    const done = new Set(list.items.filter(isIssued).map((x) => x.metadata.name));
    return names.every((n) => done.has(n)) ? true : undefined;
  }, `${names.length} requests to be issued`, tries);
}

/** CertificateIssued events per request (series folded): a second issuance of one request would show as a count above 1. */
async function issuedEvents(c: Cluster): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const e of (await c.admin.events.list({ namespace: "default" })).items) {
    if (e.reason !== "CertificateIssued") continue;
    const name = e.regarding?.name ?? "";
    counts.set(name, (counts.get(name) ?? 0) + (e.series?.count ?? 1));
  }
  return counts;
}

/** The default client throttle (20/s, burst 30) would make a burst of hundreds take minutes. */
const FAST = ["--kube-api-qps", "500", "--kube-api-burst", "500"];

describe("failures", () => {
  it("recovers from an API server restart in the middle of a burst and issues nothing twice", async () => {
    const c = await startCluster();
    try {
      const controller = await c.startController(["--leader-elect=false", ...FAST]);
      let restarted: Promise<void> | undefined;
      const names = await burst(c, "restart", 300, 8, (n) => {
        if (n === 100) restarted = c.restartApiserver(300);
      });
      await restarted;
      await allIssued(c, names);
      // A write whose answer was lost in the restart is counted when the controller's cache shows the certificate
      // it wrote; give the cache a bounded moment to catch up, then the count must be exact (not more: never twice).
      let metrics = "";
      for (let i = 0; i < 50; i++) {
        metrics = (await opsGet(c.adminConfig, `${controller.ops}/metrics`)).text;
        if (sample(metrics, 'platform_ca_csr_signed_total{signer="platform.io/apiserver-client-nodeagent"}') >= 300) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(sample(metrics, 'platform_ca_csr_signed_total{signer="platform.io/apiserver-client-nodeagent"}')).toBe(300);
      expect(sample(metrics, 'platform_ca_csr_approved_total{signer="platform.io/apiserver-client-nodeagent"}')).toBe(300);
      const events = await issuedEvents(c);
      expect([...events.values()].filter((n) => n > 1)).toEqual([]);
    } finally {
      await c.stop();
    }
  }, 120_000);

  it("hands over to the standby when the leader is killed, within the lease duration and a retry, and issues nothing twice", async () => {
    const c = await startCluster();
    try {
      const config = join(tempDir("controller-le-"), "cm.yaml");
      const [leaseMs, retryMs] = [4000, 500];
      writeFileSync(
        config,
        `apiVersion: platformcontrollermanager.config.platform.io/v1alpha1\nkind: PlatformControllerManagerConfiguration\nGeneric:\n  LeaderElection:\n    leaderElect: true\n    leaseDuration: ${leaseMs}ms\n    renewDeadline: 3s\n    retryPeriod: ${retryMs}ms\n`,
      );
      const replicas = [await c.startController(["--config", config, ...FAST]), await c.startController(["--config", config, ...FAST])];
      const leading = async (r: ControllerProc) => (await opsGet(c.adminConfig, `${r.ops}/readyz?verbose`)).text.includes("leader-election ok (leading)");
      const leader = await until(async () => {
        for (const r of replicas) if (await leading(r)) return r;
        return undefined;
      }, "a leader");
      const standby = replicas.find((r) => r !== leader)!;
      const first = await burst(c, "before", 60);
      await allIssued(c, first);
      // Kill while a burst is in flight: nothing gets to release the lease.
      const during = burst(c, "during", 60);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await leader.stop("SIGKILL");
      const killedAt = Date.now();
      await until(() => leading(standby).then((ok) => (ok ? true : undefined)), "the standby to lead", 2000);
      const takeover = Date.now() - killedAt;
      // The standby sees the lease expire leaseDuration after it last saw it change, then needs one jittered attempt.
      expect(takeover).toBeLessThan(leaseMs + 2.2 * retryMs * 2 + 1000);
      const names = [...first, ...(await during)];
      await allIssued(c, names);
      const events = await issuedEvents(c);
      expect([...events.values()].filter((n) => n > 1)).toEqual([]);
      const list = await c.admin.csrs.list();
      expect(list.items.filter((x) => findCondition(x, "Failed"))).toEqual([]);
      process.stdout.write(`leader killed; standby leading after ${takeover} ms (leaseDuration ${leaseMs} ms, retryPeriod ${retryMs} ms)\n`);
    } finally {
      await c.stop();
    }
  }, 120_000);
});

describe("platform-ca controller --config with a Custom serving approval policy", () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster();
    const config = approverConfig("serving-policy.yaml", [
      "ServingPolicy: Custom",
      "Serving:",
      '  DNSPatterns: ["{node}.nodes.example"]',
      '  IPCIDRs: ["10.0.0.0/8"]',
      "  MaxDuration: 720h",
      "  UsernameMustMatchCN: false",
    ]);
    await c.startController(["--config", config, "--leader-elect=false"]);
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  const serving = (name: string, node: string, san: string, expirationSeconds?: number) =>
    csrObject({
      names: c.names,
      name,
      request: opensslCsr(name, `/O=system:nodes/CN=system:node:${node}`, ["-addext", `subjectAltName=${san}`]),
      signerName: c.names.signers.nodeagentServing,
      usages: ["digital signature", "key encipherment", "server auth"],
      ...(expirationSeconds !== undefined && { expirationSeconds }),
    });

  it("approves and issues a serving request the policy allows, and leaves the others pending", async () => {
    await c.admin.csrs.create(serving("fits", "node-7", "DNS:node-7.nodes.example,IP:10.1.2.3", 3600));
    await c.admin.csrs.create(serving("other-name", "node-8", "DNS:node-9.nodes.example", 3600));
    await c.admin.csrs.create(serving("no-lifetime", "node-10", "DNS:node-10.nodes.example"));
    const fits = await issued(c, "fits");
    expect(findCondition(fits, "Approved")).toMatchObject({ reason: "AutoApproved" });
    expect(openssl(["x509", "-in", leafFile(fits, "fits"), "-noout", "-ext", "subjectAltName"])).toMatch(/DNS:node-7\.nodes\.example, IP Address:10\.1\.2\.3/);
    // The approver has seen the others by now (the queue is one); they wait for a person.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const name of ["other-name", "no-lifetime"]) expect((await c.admin.csrs.get(name)).status?.conditions ?? []).toEqual([]);
  });
});

describe("platform-ca controller reusing an allowed authorization check (Approver.AuthorizationCacheTTL)", () => {
  const TTL_SECONDS = 6;
  let c: Cluster;
  let controller: ControllerProc;
  beforeAll(async () => {
    c = await startCluster();
    const config = approverConfig("review-cache.yaml", [`AuthorizationCacheTTL: ${TTL_SECONDS}s`]);
    controller = await c.startController(["--config", config, "--leader-elect=false"]);
  }, 120_000);
  afterAll(async () => {
    await c?.stop();
  });

  const nodeRequest = (node: string) => csrObject({ names: c.names, name: node, request: opensslCsr(node, `/O=system:nodes/CN=system:node:${node}`) });

  it("approves within the TTL without asking again, and stops approving once the permission is gone and the TTL has passed", async () => {
    const kubectl = kubectlWith(c.adminConfig);
    await c.bootstrapper.csrs.create(nodeRequest("cache-1"));
    await issued(c, "cache-1");
    const asked = Date.now();
    // The bootstrapper may still create requests, but no longer ask for node-agent client certificates.
    const role = "platform-ca:nodeagent-bootstrapper";
    const rules = JSON.parse(kubectl(["get", "clusterrole", role, "-o", "jsonpath={.rules}"])) as { resources: string[] }[];
    const at = rules.findIndex((r) => r.resources.includes("certificatesigningrequests/nodeclient"));
    expect(at).toBeGreaterThanOrEqual(0);
    expect(kubectl(["patch", "clusterrole", role, "--type", "json", "-p", JSON.stringify([{ op: "remove", path: `/rules/${at}` }])])).toContain("patched");
    // Inside the TTL the earlier answer still counts (the price of the cache, bounded by the TTL).
    await c.bootstrapper.csrs.create(nodeRequest("cache-2"));
    await issued(c, "cache-2");
    expect(Date.now() - asked).toBeLessThan(TTL_SECONDS * 1000);
    // After it, the server is asked again and says no: the request stays pending.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, asked + TTL_SECONDS * 1000 + 500 - Date.now())));
    await c.bootstrapper.csrs.create(nodeRequest("cache-3"));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await c.admin.csrs.get("cache-3")).status?.conditions ?? []).toEqual([]);
    const metrics = (await opsGet(c.adminConfig, `${controller.ops}/metrics`)).text;
    expect(sample(metrics, `platform_ca_csr_approved_total{signer="${c.names.signers.nodeagentClient}"}`)).toBe(2);
    expect(sample(metrics, 'platform_ca_csr_approval_reviews_total{result="reused"}')).toBe(1);
    expect(sample(metrics, 'platform_ca_csr_approval_reviews_total{result="allowed"}')).toBe(1);
    expect(sample(metrics, 'platform_ca_csr_approval_reviews_total{result="denied"}')).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

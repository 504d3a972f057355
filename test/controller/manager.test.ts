// The controller manager in-process against a real API server: the whole path, health and metrics, leader election.
import { afterEach, describe, expect, it } from "vitest";
import { findCondition, isIssued } from "../../src/api/conditions.js";
import type { Lease } from "../../src/api/types/coordination.js";
import { controllerManagerApiVersion, CONTROLLER_MANAGER_KIND, parseControllerManagerConfig } from "../../src/config/controller-manager.js";
import { controllerResources } from "../../src/controller/controllers/controller-set.js";
import { createControllerManager, type ControllerManager } from "../../src/controller/manager.js";
import { generateCa, type GeneratedCa } from "../../src/pki/ca.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { SignerRegistry } from "../../signers/registry.js";
import { nodeClientCsr, startHarness, type Harness } from "./controllers/harness.js";
import { until } from "../fixtures/wait.js";

const running: { h: Harness; managers: ControllerManager[] }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    await Promise.all(r.managers.map((m) => m.stop()));
    await r.h.stop();
  }
});

/** A configuration document with `generic` as the Generic block (YAML flow text). */
function config(generic: string) {
  const text = `apiVersion: ${controllerManagerApiVersion()}\nkind: ${CONTROLLER_MANAGER_KIND}\nGeneric: ${generic}\n`;
  return parseControllerManagerConfig(text, "test").config;
}

async function setup(generic: string, replicas = 1): Promise<{ h: Harness; ca: GeneratedCa; managers: ControllerManager[] }> {
  const h = await startHarness();
  const ca = await generateCa({ commonName: "manager test CA", keyType: "p256", lifetimeSeconds: 10 * 365 * 86_400, now: new Date(h.clock.now()) });
  const managers = Array.from({ length: replicas }, (_, i) =>
    createControllerManager({
      client: h.client("controller"),
      signers: new SignerRegistry(createBuiltinSigners({ ca: ca.ca, groupSuffix: h.names.suffix, now: () => new Date(h.clock.now()) })),
      config: config(generic),
      names: h.names,
      clock: h.clock,
      identity: `replica-${i + 1}`,
      ops: { host: "127.0.0.1", port: 0, insecureHttp: true },
    }),
  );
  running.push({ h, managers });
  for (const m of managers) await m.start();
  return { h, ca, managers };
}

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
};

async function requestAndWait(h: Harness, node: string) {
  await controllerResources(h.client("bootstrapper"), h.names).csrs.create(await nodeClientCsr(h.names, node));
  return until(async () => ((c) => (isIssued(c) ? c : undefined))(await h.admin.csrs.get(`${node}-client`)), `${node} to be issued`);
}

describe("createControllerManager", () => {
  it("approves, issues and publishes, and reports health, readiness and metrics", async () => {
    const { h, managers } = await setup("{LeaderElection: {leaderElect: false}}");
    const [m] = managers;
    await until(() => (m!.working() ? true : undefined), "the controllers to run");
    const csr = await requestAndWait(h, "node-1");
    expect(findCondition(csr, "Approved")?.reason).toBe("AutoApproved");
    await until(async () => ((await h.admin.trustBundles.list()).items.length === 4 ? true : undefined), "a bundle per signer");
    expect(await get(`${m!.opsAddress}/healthz`)).toEqual({ status: 200, body: "ok" });
    const ready = await get(`${m!.opsAddress}/readyz?verbose`);
    expect(ready.status).toBe(200);
    expect(ready.body).toContain("[+]informers-synced ok");
    expect(ready.body).toContain("[+]controller-csrsigning ok");
    const metrics = await get(`${m!.opsAddress}/metrics`);
    expect(metrics.body).toMatch(/platform_ca_csr_signed_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1/);
    expect(metrics.body).toMatch(/platform_ca_csr_approved_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1/);
    expect(metrics.body).toMatch(/platform_ca_workqueue_adds_total\{name="csrsigning"\} \d+/);
    expect(metrics.body).toMatch(/platform_ca_leader 1/);
    expect((await get(`${m!.opsAddress}/nothing`)).status).toBe(404);
    await m!.stop();
    await expect(fetch(`${m!.opsAddress}/healthz`)).rejects.toThrow();
  });

  it("runs only the controllers the list enables", async () => {
    const { h, managers } = await setup('{LeaderElection: {leaderElect: false}, Controllers: ["*", "-csrapproving", "-clustertrustbundle-publisher"]}');
    expect(managers[0]!.enabled).toEqual(["csrsigning", "csrcleaner", "serviceaccount", "clusterrole-aggregation"]);
    await until(() => (managers[0]!.working() ? true : undefined), "the controllers to run");
    await controllerResources(h.client("bootstrapper"), h.names).csrs.create(await nodeClientCsr(h.names, "node-2"));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await h.admin.csrs.get("node-2-client")).status?.conditions ?? []).toEqual([]);
    expect((await h.admin.trustBundles.list()).items).toEqual([]);
  });

  it("lets one replica lead; a clean stop hands the lease to the other, which carries on", async () => {
    const { h, managers } = await setup("{LeaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s}}", 2);
    const [a, b] = managers as [ControllerManager, ControllerManager];
    const leaders = () => managers.filter((m) => m.isLeader());
    await until(async () => {
      await h.clock.advance(1000);
      return leaders().length === 1 && leaders()[0]!.working() ? true : undefined;
    }, "one leader at work");
    const [leader, standby] = a.isLeader() ? [a, b] : [b, a];
    // The standby names the leader once it has seen the lease at one of its attempts.
    const standbyReady = await until(async () => {
      await h.clock.advance(1000);
      const r = await get(`${standby.opsAddress}/readyz?verbose`);
      return r.body.includes("leader is") ? r : undefined;
    }, "the standby to see the leader");
    expect(standbyReady.status).toBe(200);
    expect(standbyReady.body).toContain(`[+]leader-election ok (standby, leader is ${leader.identity})`);
    expect(standby.working()).toBe(false);
    await requestAndWait(h, "node-3");
    await leader.stop();
    const lease = await h.admin.leases.get("platform-controller-manager", { namespace: "platform-system" });
    expect(lease.spec?.holderIdentity).toBe("");
    // The released lease is free at the standby's next attempt: within one jittered retry period.
    const before = h.clock.now();
    await until(async () => {
      await h.clock.advance(500);
      return standby.working() ? true : undefined;
    }, "the standby to take over");
    const next = await h.admin.leases.get("platform-controller-manager", { namespace: "platform-system" });
    expect((next as Lease).spec).toMatchObject({ holderIdentity: standby.identity, leaseTransitions: 1 });
    // When the standby took it, by the lease it wrote (the fake clock's time at its attempt), not when this loop noticed:
    // on a loaded machine the attempt's requests may still be in flight while the loop advances the clock again.
    expect(Date.parse((next as Lease).spec!.acquireTime!) - before).toBeLessThanOrEqual(2000 * 2.2 + 500);
    await requestAndWait(h, "node-4");
  });
});

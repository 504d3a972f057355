// Under --group-suffix k8s.io (up, and controller beside an API server) unmodified clients get upstream names: Python kubelet bootstrap, kubectl certificate approve.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN as CLUSTER_BOOTSTRAP_TOKEN, startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { csr } from "../fixtures/csr.js";
import { ensureBuilt, kubectlFails, type Kubectl } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";
import { kubectlWith } from "./apiserver-process.js";
import { PLATFORM_CA, PLATFORMCTL } from "../fixtures/repo.js";

const PYTHON = "/usr/bin/python3";
const SCRIPT = new URL("./kubelet_csr.py", import.meta.url).pathname;
const BOOTSTRAP_TOKEN = "abcdef.0123456789abcdef";

/** The Python kubelet bootstrap (kubelet_csr.py) against a kubeconfig's server; what it saw. */
function kubeletBootstrap(kubeconfig: string, token: string, node: string): Record<string, unknown> {
  return JSON.parse(execFileSync(PYTHON, [SCRIPT, kubeconfig, token, node], { encoding: "utf8", timeout: 90_000 })) as Record<string, unknown>;
}

async function until<T>(read: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 150; i++) {
    const value = read();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("platform-ca up --group-suffix k8s.io with unmodified clients", () => {
  let up: UpProcess;
  let kubectl: Kubectl;
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-names-"));

  beforeAll(async () => {
    ensureBuilt();
    const tokenFile = join(dir, "tokens.csv");
    writeFileSync(tokenFile, `${BOOTSTRAP_TOKEN},system:bootstrap:abcdef,bootstrap-abcdef,"system:bootstrappers"\n`, { mode: 0o600 });
    up = await startUp({ dataDir: join(dir, "data"), args: ["--group-suffix", "k8s.io", "--token-file", tokenFile] });
    kubectl = kubectlWith(up.adminConfig);
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("auto-approves and issues a kubelet's bootstrap CSR made with the Python client, verifiable against the published bundle", () => {
    const seen = kubeletBootstrap(up.adminConfig, BOOTSTRAP_TOKEN, "worker-1");
    expect(seen).toMatchObject({
      requester: "system:bootstrap:abcdef",
      subject: "CN=system:node:worker-1,O=system:nodes",
      sameKey: true,
      clientAuth: true,
      valid: true,
      verifiedBy: [expect.any(String)],
    });
    expect(seen["groups"]).toContain("system:bootstrappers");
    expect(seen["conditions"]).toContainEqual({ type: "Approved", status: "True", reason: "AutoApproved", message: "Auto approving kubelet client certificate after SubjectAccessReview." });
    // Renewing with that certificate is the node asking for itself: allowed by the selfnodeclient role.
    expect(seen["renewal"]).toEqual(["system:node:worker-1", ["Auto approving self kubelet client certificate after SubjectAccessReview."]]);
    expect(seen["bundle"]).toMatch(/^kubernetes\.io:kube-apiserver-client-kubelet:[0-9a-f]{16}$/);
    // The approval followed the approver's SubjectAccessReview, recorded as an Event on the request.
    const events = kubectl(["get", "events.events.k8s.io", "-A", "-o", "jsonpath={range .items[*]}{.regarding.name} {.reason}{\"\\n\"}{end}"]);
    expect(events).toContain("node-csr-worker-1 AutoApproved");
  }, 120_000);

  it("publishes kube-root-ca.crt in every namespace, holding the CA that admin.conf trusts for the server", async () => {
    const published = await until(() => kubectl(["get", "configmap", "kube-root-ca.crt", "-n", "default", "-o", "jsonpath={.data.ca\\.crt}", "--ignore-not-found"]) || undefined, "kube-root-ca.crt");
    const trusted = Buffer.from(kubectl(["config", "view", "--raw", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}"]), "base64").toString();
    expect(published).toBe(trusted);
    expect(kubectl(["get", "configmap", "kube-root-ca.crt", "-n", "default", "-o", "jsonpath={.metadata.annotations.kubernetes\\.io/description}"])).toMatch(/^Contains a CA bundle that can be used to verify the kube-apiserver/);
  });

  it("has upstream's system namespaces, so a kubelet's node Lease and a component's leader Lease have their place", () => {
    expect(kubectl(["get", "namespaces", "-o", "name"]).trim().split("\n").sort()).toEqual(
      ["default", "kube-node-lease", "kube-public", "kube-system", "platform-system"].map((n) => `namespace/${n}`),
    );
    const lease = (ns: string, name: string) => `apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: ${name}, namespace: ${ns}}\nspec: {holderIdentity: ${name}, leaseDurationSeconds: 40}\n`;
    expect(kubectl(["create", "-f", "-"], lease("kube-node-lease", "worker-1"))).toContain("lease.coordination.k8s.io/worker-1 created");
    expect(kubectl(["create", "-f", "-"], lease("kube-system", "kube-controller-manager"))).toContain("lease.coordination.k8s.io/kube-controller-manager created");
    expect(kubectlFails(kubectl, ["delete", "namespace", "kube-system"])).toContain("this namespace may not be deleted");
  });

  it("issues a kubernetes.io/kube-apiserver-client CSR approved with kubectl certificate approve", async () => {
    const request = await csr({ cn: "alice", o: ["devs"] });
    kubectl(["create", "-f", "-"], JSON.stringify({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      metadata: { name: "alice" },
      spec: { request: Buffer.from(request.pem).toString("base64"), signerName: "kubernetes.io/kube-apiserver-client", usages: ["digital signature", "client auth"] },
    }));
    expect(kubectl(["get", "csr", "alice", "-o", "jsonpath={.status.conditions}"])).toBe("");
    expect(kubectl(["certificate", "approve", "alice"])).toMatch(/certificatesigningrequest\.certificates\.k8s\.io\/alice approved/);
    const pem = await until(() => {
      const b64 = kubectl(["get", "csr", "alice", "-o", "jsonpath={.status.certificate}"]);
      return b64 === "" ? undefined : Buffer.from(b64, "base64").toString();
    }, "alice's certificate");
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(kubectl(["get", "csr", "alice"])).toMatch(/alice .*kubernetes\.io\/kube-apiserver-client .*Approved,Issued/);
    const bundles = kubectl(["get", "clustertrustbundles", "-o", "jsonpath={.items[*].spec.signerName}"]).split(" ");
    expect(bundles).toContain("kubernetes.io/kube-apiserver-client");
    expect(bundles.some((s) => s.startsWith("k8s.io/"))).toBe(false);
  }, 60_000);

  it("has platform-ca credential ask upstream's API server client signer by default", () => {
    const args = ["credential", "--group-suffix", "k8s.io", "--cn", "bob", "--platformconfig", up.adminConfig, "--cache-dir", join(dir, "cache"), "--timeout", "2s"];
    const r = spawnSync(process.execPath, [PLATFORM_CA, ...args], { encoding: "utf8", timeout: 30_000 });
    // Never auto-approved, so it waits, saying for which signer, and times out.
    expect(r.stderr).toMatch(/^waiting for CSR credential-\w+ to be approved \(signer kubernetes\.io\/kube-apiserver-client\)\n/);
    expect(r.status).not.toBe(0);
    const made = kubectl(["get", "csr", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.signerName}{\"\\n\"}{end}"]);
    expect(made).toMatch(/^credential-\w+=kubernetes\.io\/kube-apiserver-client$/m);
  }, 60_000);

  it("has platformctl certificate request ask upstream's API server client signer by default", () => {
    const args = ["--platformconfig", up.adminConfig, "--group-suffix", "k8s.io", "--cache-dir", join(dir, "ctl-cache"), "certificate", "request", "carol", "--cn", "carol", "--key-out", join(dir, "carol.key")];
    execFileSync(process.execPath, [PLATFORMCTL, ...args], { encoding: "utf8", timeout: 30_000 });
    expect(kubectl(["get", "csr", "carol", "-o", "jsonpath={.spec.signerName}"])).toBe("kubernetes.io/kube-apiserver-client");
  }, 60_000);
});

describe("platform-ca controller --group-suffix k8s.io beside another API server", () => {
  let cluster: Cluster;

  beforeAll(async () => {
    ensureBuilt();
    cluster = await startCluster({ apiserverArgs: ["--group-suffix", "k8s.io"] });
    await cluster.startController(["--group-suffix", "k8s.io"]);
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("approves, issues and publishes for a kubelet's CSR with upstream's names", () => {
    const seen = kubeletBootstrap(cluster.adminConfig, CLUSTER_BOOTSTRAP_TOKEN, "worker-2");
    expect(seen).toMatchObject({ requester: "system:bootstrap:e2e001", subject: "CN=system:node:worker-2,O=system:nodes", sameKey: true, verifiedBy: [expect.any(String)] });
    expect(seen["conditions"]).toContainEqual({ type: "Approved", status: "True", reason: "AutoApproved", message: "Auto approving kubelet client certificate after SubjectAccessReview." });
    expect(seen["bundle"]).toMatch(/^kubernetes\.io:kube-apiserver-client-kubelet:[0-9a-f]{16}$/);
  }, 120_000);
});

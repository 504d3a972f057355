// Real clients, unmodified, against `platform-ca up --group-suffix k8s.io`: @kubernetes/client-node (an informer on
// CSRs, the approval subresource), kubectl's typed commands (certificate, wait, auth, create token, describe) and the
// official Python client reading cluster-info without credentials, as kubeadm's token discovery does.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { CertificatesV1Api, KubeConfig, makeInformer, type V1CertificateSigningRequest } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csr } from "../fixtures/csr.js";
import { ensureBuilt, kubectlFails, type Kubectl } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";
import { kubectlWith } from "./apiserver-process.js";
import { PLATFORM_CA, PLATFORMCTL as CTL } from "../fixtures/repo.js";

/** A signer no controller knows: approve and deny work the same under any naming of the well-known signers. */
const CUSTOM_SIGNER = "example.com/test";

const ANONYMOUS_CLUSTER_INFO = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /api/v1/namespaces/kube-public/configmaps/cluster-info
`;

/**
 * kubeadm join's token discovery with the official Python client (no discovery documents, as client-go's typed call):
 * cluster-info read without credentials and without trusting the server yet, its signature for the token checked
 * with python's hmac as kubeadm recomputes it; prints the kubeconfig, or why it is not to be trusted.
 */
const DISCOVER = `
import base64, hashlib, hmac, sys, urllib3
urllib3.disable_warnings()
from kubernetes import client
from kubernetes.client.rest import ApiException
server, token_id, token_secret, name = sys.argv[1:5]
c = client.Configuration(); c.host = server; c.verify_ssl = False
api = client.CoreV1Api(client.ApiClient(c))
try:
    cm = api.read_namespaced_config_map(name, "kube-public")
except ApiException as e:
    print("refused", e.status); sys.exit(0)
content = cm.data["kubeconfig"]
sig = (cm.data or {}).get("jws-kubeconfig-" + token_id)
if sig is None:
    print("unsigned"); sys.exit(0)
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b"=")
header, _, mac = sig.split(".")
want = b(hmac.new(token_secret.encode().ljust(32, b"\\0"), header.encode() + b"." + b(content.encode()), hashlib.sha256).digest()).decode()
print("signed" if hmac.compare_digest(mac, want) and base64.urlsafe_b64decode(header + "==") == b'{"alg":"HS256","kid":"' + token_id.encode() + b'"}' else "forged")
print(content)
`;

function discover(name = "cluster-info", secret = "0123456789abcdef"): string {
  return execFileSync("/usr/bin/python3", ["-c", DISCOVER, up.address, "abcdef", secret, name], { encoding: "utf8", timeout: 30_000 });
}

let up: UpProcess;
let auditLog: string;
let kubectl: Kubectl;
/** The server's built-in client signer (whatever its well-known name), read from the trust bundles it publishes. */
let clientSigner: string;

async function csrBody(name: string, signerName: string, cn = name): Promise<V1CertificateSigningRequest> {
  const pem = (await csr({ cn, o: ["devs"] })).pem;
  return {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name },
    spec: { request: Buffer.from(pem).toString("base64"), signerName, usages: ["digital signature", "client auth"] },
  };
}

async function eventually<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function platformctl(args: readonly string[], home: string): string {
  return execFileSync(process.execPath, [CTL, "--platformconfig", up.adminConfig, "--group-suffix", "k8s.io", ...args], {
    encoding: "utf8",
    env: { ...process.env, HOME: home },
    timeout: 30_000,
  });
}

beforeAll(async () => {
  ensureBuilt();
  // Anonymous requests only where kubeadm's discovery reads: cluster-info (docs/operations.md's recipe).
  const configDir = mkdtempSync(join(tmpdir(), "up-config-"));
  const authn = join(configDir, "authentication.yaml");
  writeFileSync(authn, ANONYMOUS_CLUSTER_INFO);
  // ServiceAccounts' requests audited (the legacy token annotations), and anyone's `auth whoami` (a refused token's
  // request has no user to match).
  const policy = join(configDir, "audit-policy.yaml");
  writeFileSync(
    policy,
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  userGroups: [system:serviceaccounts]\n- level: Metadata\n  resources: [{group: authentication.k8s.io, resources: [selfsubjectreviews]}]\n",
  );
  auditLog = join(configDir, "audit.log");
  up = await startUp({ args: ["--group-suffix", "k8s.io", "--enable-bootstrap-token-auth", "--authentication-config", authn, "--audit-policy-file", policy, "--audit-log-path", auditLog] });
  kubectl = kubectlWith(up.adminConfig);
  clientSigner = await eventually("the published client signer", () => {
    const names = kubectl(["get", "clustertrustbundles", "-o", "jsonpath={.items[*].spec.signerName}"]).split(" ");
    return names.find((n) => /apiserver-client$/.test(n));
  });
}, 240_000);
afterAll(async () => {
  if (up?.child.exitCode === null) expect(await up.stop()).toBe(0);
});

describe("@kubernetes/client-node", () => {
  it("an informer on CSRs sees the create, the approval through replaceCertificateSigningRequestApproval, and the issuance", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(up.adminConfig);
    const api = kc.makeApiClient(CertificatesV1Api);
    const seen: string[] = [];
    const name = "client-node-1";
    const informer = makeInformer(kc, "/apis/certificates.k8s.io/v1/certificatesigningrequests", () => api.listCertificateSigningRequest());
    const record = (csrObj: V1CertificateSigningRequest) => {
      if (csrObj.metadata?.name !== name) return;
      const state = csrObj.status?.certificate ? "issued" : csrObj.status?.conditions?.some((c) => c.type === "Approved") ? "approved" : "pending";
      if (seen.at(-1) !== state) seen.push(state);
    };
    informer.on("add", record);
    informer.on("update", record);
    await informer.start();
    try {
      await api.createCertificateSigningRequest({ body: await csrBody(name, clientSigner) });
      await eventually("the informer's add", () => (seen.includes("pending") ? true : undefined));
      const current = await api.readCertificateSigningRequest({ name });
      const approved = await api.replaceCertificateSigningRequestApproval({
        name,
        body: {
          ...current,
          status: { conditions: [{ type: "Approved", status: "True", reason: "ClientNodeApprove", message: "approved by a client-node test" }] },
        },
      });
      expect(approved.status?.conditions?.[0]).toMatchObject({ type: "Approved", status: "True", reason: "ClientNodeApprove" });
      await eventually("the informer's issuance", () => (seen.includes("issued") ? true : undefined));
      expect(seen).toEqual(["pending", "approved", "issued"]);
      const issued = await api.readCertificateSigningRequest({ name });
      expect(Buffer.from(issued.status!.certificate!, "base64").toString()).toContain("-----BEGIN CERTIFICATE-----");
    } finally {
      await informer.stop();
    }
  });
});

describe("kubectl's typed commands", () => {
  it("approves and denies with kubectl certificate, and kubectl wait sees the Approved condition", async () => {
    kubectl(["create", "-f", "-"], JSON.stringify(await csrBody("kubectl-approve", CUSTOM_SIGNER)));
    kubectl(["create", "-f", "-"], JSON.stringify(await csrBody("kubectl-deny", CUSTOM_SIGNER)));
    expect(kubectl(["certificate", "approve", "kubectl-approve"])).toContain("certificatesigningrequest.certificates.k8s.io/kubectl-approve approved");
    expect(kubectl(["certificate", "deny", "kubectl-deny"])).toContain("certificatesigningrequest.certificates.k8s.io/kubectl-deny denied");
    expect(kubectl(["wait", "--for=condition=Approved", "csr/kubectl-approve", "--timeout=20s"])).toContain("condition met");
    expect(kubectl(["get", "csr", "kubectl-deny", "-o", "jsonpath={.status.conditions[0].type}"])).toBe("Denied");
  });

  it("prints kubectl auth whoami", () => {
    const out = kubectl(["auth", "whoami"]);
    expect(out).toMatch(/^ATTRIBUTE\s+VALUE\nUsername\s+\S+\nGroups\s+\[.*system:masters.*\]\n/);
  });

  it("lists the caller's rules with kubectl auth can-i --list, and platformctl prints the same table", () => {
    const admin = kubectl(["auth", "can-i", "--list"]);
    expect(admin).toMatch(/^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs\n\*\.\*\s+\[\]\s+\[\]\s+\[\*\]\n\s+\[\*\]\s+\[\]\s+\[\*\]\n/);
    kubectl(["create", "serviceaccount", "lister"]);
    const asSa = ["auth", "can-i", "--list", "--as", "system:serviceaccount:default:lister"];
    const theirs = kubectl(asSa);
    expect(theirs).toMatch(/^selfsubjectrulesreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/m);
    expect(theirs).not.toMatch(/^\*\.\*/m);
    const home = mkdtempSync(join(tmpdir(), "platformctl-home-"));
    expect(platformctl(asSa, home)).toBe(theirs);
    expect(platformctl(["auth", "can-i", "--list"], home)).toBe(admin);
  });

  it("creates a token for the default ServiceAccount the controller makes in every namespace, and again after it is deleted", async () => {
    expect(kubectl(["create", "token", "default"]).trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    kubectl(["create", "namespace", "team-a"]);
    const uid = await eventually("default in team-a", () => {
      try {
        return kubectl(["get", "serviceaccount", "default", "-n", "team-a", "-o", "jsonpath={.metadata.uid}"]) || undefined;
      } catch {
        return undefined;
      }
    });
    expect(kubectl(["create", "token", "default", "-n", "team-a"]).trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    kubectl(["delete", "serviceaccount", "default", "-n", "team-a"]);
    const again = await eventually("default recreated in team-a", () => {
      try {
        const now = kubectl(["get", "serviceaccount", "default", "-n", "team-a", "-o", "jsonpath={.metadata.uid}"]);
        return now && now !== uid ? now : undefined;
      } catch {
        return undefined;
      }
    });
    expect(again).not.toBe(uid);
  });

  it("fills a token Secret, kubectl authenticates with its token, and the token stops working when the Secret or its ServiceAccount goes", async () => {
    kubectl(["create", "serviceaccount", "build-robot"]);
    const secret = (name: string, account: string) =>
      JSON.stringify({ apiVersion: "v1", kind: "Secret", type: "kubernetes.io/service-account-token", metadata: { name, annotations: { "kubernetes.io/service-account.name": account } } });
    kubectl(["apply", "-f", "-"], secret("build-robot-token", "build-robot"));
    const token = await eventually("the token in the Secret", () => Buffer.from(kubectl(["get", "secret", "build-robot-token", "-o", "jsonpath={.data.token}"]), "base64").toString() || undefined);
    expect(Buffer.from(kubectl(["get", "secret", "build-robot-token", "-o", "jsonpath={.data.ca\\.crt}"]), "base64").toString()).toBe(readFileSync(join(up.dataDir, "pki", "ca.crt"), "utf8"));
    expect(kubectl(["get", "secret", "build-robot-token", "-o", "jsonpath={.data.namespace}"])).toBe(Buffer.from("default").toString("base64"));
    // The controller's informer selects token Secrets by type, as kubectl can.
    kubectl(["create", "secret", "generic", "plain", "--from-literal=a=b"]);
    expect(kubectl(["get", "secrets", "--field-selector", "type=kubernetes.io/service-account-token", "-o", "name"]).trim()).toBe("secret/build-robot-token");
    const uid = kubectl(["get", "serviceaccount", "build-robot", "-o", "jsonpath={.metadata.uid}"]);
    expect(kubectl(["get", "secret", "build-robot-token", "-o", "jsonpath={.metadata.annotations.kubernetes\\.io/service-account\\.uid}"])).toBe(uid);
    // kubectl with nothing but the server, its CA and the token.
    const asRobot = (args: readonly string[]) =>
      execFileSync("kubectl", ["--kubeconfig", "/dev/null", "--server", up.address, "--certificate-authority", join(up.dataDir, "pki", "ca.crt"), "--token", token, ...args], { encoding: "utf8", stdio: ["pipe", "pipe", "pipe"], timeout: 30_000 });
    expect(asRobot(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid}"])).toBe(`system:serviceaccount:default:build-robot ${uid}`);
    // Each use is in the audit log with upstream's annotations, and counted in upstream's metrics.
    const legacyAnnotations = () =>
      readFileSync(auditLog, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { stage: string; user: { username: string }; annotations?: Record<string, string> })
        .filter((e) => e.stage === "ResponseComplete" && e.user.username === "system:serviceaccount:default:build-robot")
        .map((e) => Object.fromEntries(Object.entries(e.annotations ?? {}).filter(([k]) => k.includes("legacy-token"))));
    expect(legacyAnnotations().at(-1)).toEqual({
      "authentication.k8s.io/legacy-token": "system:serviceaccount:default:build-robot",
      "authentication.k8s.io/legacy-token-manual-secret": "build-robot-token",
    });
    const counted = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(kubectl(["get", "--raw", "/metrics"]))?.[1]);
    expect(counted("serviceaccount_legacy_tokens_total")).toBeGreaterThanOrEqual(1);
    const manual = counted("serviceaccount_legacy_manual_token_uses_total");
    expect(manual).toBeGreaterThanOrEqual(1);
    // Listed in its account's secrets, the token counts as auto-generated (upstream's rule).
    kubectl(["patch", "serviceaccount", "build-robot", "--type", "merge", "-p", '{"secrets":[{"name":"build-robot-token"}]}']);
    // kubectl prints upstream's warning for such a token.
    const warned = spawnSync("kubectl", ["--kubeconfig", "/dev/null", "--server", up.address, "--certificate-authority", join(up.dataDir, "pki", "ca.crt"), "--token", token, "auth", "whoami"], { encoding: "utf8", timeout: 30_000 });
    expect(warned.status).toBe(0);
    expect(warned.stderr).toContain("Warning: Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.");
    expect(spawnSync("kubectl", ["--kubeconfig", up.adminConfig, "auth", "whoami"], { encoding: "utf8" }).stderr).not.toContain("TokenRequest API");
    expect(legacyAnnotations().at(-1)).toMatchObject({ "authentication.k8s.io/legacy-token-autogenerated-secret": "build-robot-token" });
    expect(counted("serviceaccount_legacy_auto_token_uses_total")).toBeGreaterThanOrEqual(1);
    expect(counted("serviceaccount_legacy_manual_token_uses_total")).toBe(manual);
    // The server keeps the day of the token's last use on its Secret, as upstream does.
    expect(kubectl(["get", "secret", "build-robot-token", "-o", "jsonpath={.metadata.labels.kubernetes\\.io/legacy-token-last-used}"])).toBe(new Date().toISOString().slice(0, 10));
    // Authenticated, then authorized like any ServiceAccount: nothing granted, so listing CSRs is refused.
    expect(kubectlFails(Object.assign(asRobot, { baseArgs: [] }), ["get", "csr"])).toMatch(/Forbidden.*system:serviceaccount:default:build-robot/);
    // A token Secret for an account that does not exist is deleted, as upstream's tokens controller does.
    kubectl(["apply", "-f", "-"], secret("orphan-token", "nobody"));
    await eventually("the orphan Secret deleted", () => (kubectl(["get", "secrets", "-o", "name"]).includes("orphan-token") ? undefined : true));
    // The Secret labelled invalid, then the account deleted (its Secret with it): each time the token is refused.
    kubectl(["label", "secret", "build-robot-token", "kubernetes.io/legacy-token-invalid-since=2026-11-28"]);
    expect(kubectlFails(Object.assign(asRobot, { baseArgs: [] }), ["auth", "whoami"])).toMatch(/Unauthorized.*invalid since 2026-11-28: use tokens from the TokenRequest API.*remove the Secret's kubernetes.io\/legacy-token-invalid-since label/);
    // Still counted, as upstream counts uses of invalidated tokens, and its refusal audited with upstream's annotation.
    expect(counted("serviceaccount_invalid_legacy_auto_token_uses_total")).toBe(1);
    const refusals = readFileSync(auditLog, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { responseStatus?: { code?: number }; annotations?: Record<string, string> })
      .filter((e) => e.responseStatus?.code === 401 && e.annotations?.["authentication.k8s.io/legacy-token-invalidated"] !== undefined);
    expect(refusals.map((e) => e.annotations!["authentication.k8s.io/legacy-token-invalidated"])).toEqual(["build-robot-token/default"]);
    kubectl(["label", "secret", "build-robot-token", "kubernetes.io/legacy-token-invalid-since-"]);
    expect(asRobot(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"])).toBe("system:serviceaccount:default:build-robot");
    kubectl(["delete", "serviceaccount", "build-robot"]);
    await eventually("the token Secret deleted with its account", () => (kubectl(["get", "secrets", "-o", "name"]).includes("build-robot-token") ? undefined : true));
    expect(kubectlFails(Object.assign(asRobot, { baseArgs: [] }), ["auth", "whoami"])).toMatch(/Unauthorized/);
  });

  it("joins a node agent kubeadm's way: cluster-info discovered anonymously and trusted through the token's signature, its kubelet client CSR approved and issued, the token deleted once expired", async () => {
    const expiration = new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z");
    const secret = (exp: string) =>
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        type: "bootstrap.kubernetes.io/token",
        metadata: { name: "bootstrap-token-abcdef", namespace: "kube-system" },
        stringData: {
          "token-id": "abcdef",
          "token-secret": "0123456789abcdef",
          expiration: exp,
          "usage-bootstrap-authentication": "true",
          "usage-bootstrap-signing": "true",
          "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
        },
      });
    kubectl(["apply", "-f", "-"], secret(expiration));
    // Discovery: what `up` published, signed by the bootstrap signer for this token; a wrong secret sees a forgery.
    const found = await eventually("cluster-info signed for the token", () => {
      const out = discover();
      return out.startsWith("signed\n") ? out : undefined;
    });
    expect(discover("cluster-info", "0123456789abcdee")).toMatch(/^forged\n/);
    const cluster = (parseYaml(found.slice("signed\n".length)) as { clusters: { cluster: Record<string, string> }[] }).clusters[0]!.cluster;
    expect(cluster.server).toBe(up.address);
    const caPem = Buffer.from(cluster["certificate-authority-data"]!, "base64").toString();
    expect(caPem).toBe(readFileSync(join(up.dataDir, "pki", "ca.crt"), "utf8"));
    // Anonymous access reaches that one object only: another ConfigMap of kube-public, and the API, answer 401.
    expect(discover("kube-root-ca.crt")).toBe("refused 401\n");
    const caFile = join(mkdtempSync(join(tmpdir(), "discovered-")), "ca.crt");
    writeFileSync(caFile, caPem);
    const asNode = (args: readonly string[], input?: string) =>
      execFileSync("kubectl", ["--kubeconfig", "/dev/null", "--server", cluster.server!, "--certificate-authority", caFile, "--token", "abcdef.0123456789abcdef", ...args], { input, encoding: "utf8", stdio: ["pipe", "pipe", "pipe"], timeout: 30_000 });
    const who = JSON.parse(asNode(["auth", "whoami", "-o", "json"])).status.userInfo;
    expect(who).toEqual({ username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"] });
    // What a kubelet sends with its bootstrap token: a client CSR for system:node:<name>, which the approver approves.
    const pem = (await csr({ cn: "system:node:boot-1", o: ["system:nodes"] })).pem;
    const request = { apiVersion: "certificates.k8s.io/v1", kind: "CertificateSigningRequest", metadata: { name: "boot-1" }, spec: { request: Buffer.from(pem).toString("base64"), signerName: "kubernetes.io/kube-apiserver-client-kubelet", usages: ["digital signature", "client auth"] } };
    asNode(["create", "-f", "-"], JSON.stringify(request));
    const issued = await eventually("the node's certificate", () => asNode(["get", "csr", "boot-1", "-o", "jsonpath={.status.certificate}"]) || undefined);
    expect(Buffer.from(issued, "base64").toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(kubectl(["get", "csr", "boot-1", "-o", "jsonpath={.spec.username} {.status.conditions[0].reason}"])).toBe("system:bootstrap:abcdef AutoApproved");
    // Expired: the token cleaner `up` runs deletes its Secret, the token no longer authenticates, its signature goes.
    kubectl(["apply", "-f", "-"], secret("2020-01-01T00:00:00Z"));
    await eventually("the expired token deleted", () => (kubectl(["get", "secrets", "-n", "kube-system", "-o", "name"]).includes("bootstrap-token-abcdef") ? undefined : true));
    expect(kubectlFails(Object.assign(asNode, { baseArgs: [] }), ["auth", "whoami"])).toMatch(/Unauthorized/);
    await eventually("the expired token's signature removed", () => (discover().startsWith("unsigned\n") ? true : undefined));
  });

  it("grants upstream's view through a RoleBinding, and view grows with a ClusterRole labelled aggregate-to-view", async () => {
    expect(kubectl(["get", "clusterrole", "view", "-o", "jsonpath={.aggregationRule.clusterRoleSelectors[0].matchLabels}"])).toBe('{"rbac.authorization.k8s.io/aggregate-to-view":"true"}');
    kubectl(["create", "namespace", "viewers"]);
    kubectl(["create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "viewers"]);
    // kubectl auth can-i prints no and exits 1 for a refusal.
    const can = (verb: string, resource: string, ns = "viewers") => {
      try {
        return kubectl(["auth", "can-i", verb, resource, "-n", ns, "--as", "alice"]).trim();
      } catch (err) {
        return String((err as { stdout?: string }).stdout).trim();
      }
    };
    expect([can("get", "configmaps"), can("list", "events"), can("create", "configmaps"), can("get", "secrets"), can("get", "configmaps", "default")]).toEqual(["yes", "yes", "no", "no", "no"]);
    expect(can("list", "leases.coordination.k8s.io")).toBe("no");
    kubectl(["apply", "-f", "-"], JSON.stringify({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "leases-view", labels: { "rbac.authorization.k8s.io/aggregate-to-view": "true" } },
      rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "list", "watch"] }],
    }));
    await eventually("view to aggregate the new role", () => (can("list", "leases.coordination.k8s.io") === "yes" ? true : undefined));
    // view aggregates into edit and edit into admin: the new rule reaches both.
    expect(kubectl(["get", "clusterrole", "admin", "-o", "jsonpath={.rules[*].resources}"])).toContain('["leases"]');
    kubectl(["delete", "clusterrole", "leases-view"]);
    await eventually("the rule gone with its role", () => (can("list", "leases.coordination.k8s.io") === "no" ? true : undefined));
  });

  it("lets a user bound to upstream's kube-apiserver-client-approver approve for that signer and no other", async () => {
    kubectl(["apply", "-f", "-"], JSON.stringify({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "csr-approval" },
      rules: [
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests/approval"], verbs: ["update"] },
      ],
    }));
    kubectl(["create", "clusterrolebinding", "bob-csr-approval", "--clusterrole=csr-approval", "--user=bob"]);
    kubectl(["create", "clusterrolebinding", "bob-client-approver", "--clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver", "--user=bob"]);
    kubectl(["create", "-f", "-"], JSON.stringify(await csrBody("bob-may", "kubernetes.io/kube-apiserver-client")));
    kubectl(["create", "-f", "-"], JSON.stringify(await csrBody("bob-may-not", "kubernetes.io/kube-apiserver-client-kubelet")));
    kubectl(["certificate", "approve", "bob-may", "--as", "bob"]);
    expect(kubectl(["get", "csr", "bob-may", "-o", "jsonpath={.status.conditions[0].type}"])).toBe("Approved");
    expect(kubectlFails(kubectl, ["certificate", "approve", "bob-may-not", "--as", "bob"])).toMatch(/Forbidden.*user not permitted to approve requests with signerName "kubernetes.io\/kube-apiserver-client-kubelet"/);
    expect(kubectl(["get", "csr", "bob-may-not", "-o", "jsonpath={.status.conditions}"])).toBe("");
  });

  it("makes, lists and deletes bootstrap tokens with platform-ca token, as kubeadm token does; kubectl authenticates with one until it is deleted", () => {
    const tokenCli = (args: readonly string[]) =>
      execFileSync(process.execPath, [PLATFORM_CA, "token", ...args, "--platformconfig", up.adminConfig, "--group-suffix", "k8s.io"], { encoding: "utf8", timeout: 30_000 });
    const token = tokenCli(["create", "--ttl", "2h", "--groups", "system:bootstrappers:workers", "--description", "rack 4"]).trim();
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const id = token.slice(0, 6);
    // The Secret kubeadm would make, read back with kubectl.
    const secret = JSON.parse(kubectl(["get", "secret", `bootstrap-token-${id}`, "-n", "kube-system", "-o", "json"])) as { type: string; data: Record<string, string> };
    const data = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
    expect(secret.type).toBe("bootstrap.kubernetes.io/token");
    expect(data).toMatchObject({ "token-id": id, "token-secret": token.slice(7), "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true", "auth-extra-groups": "system:bootstrappers:workers", description: "rack 4" });
    expect(Date.parse(data.expiration!) - Date.now()).toBeGreaterThan(7_100_000);
    const listed = tokenCli(["list"]).split("\n").find((l) => l.startsWith(token));
    expect(listed).toMatch(new RegExp(`^${token}\\s+1h\\s+\\S+Z\\s+signing,authentication\\s+rack 4\\s+system:bootstrappers:workers$`));
    const asNode = (args: readonly string[]) =>
      execFileSync("kubectl", ["--kubeconfig", "/dev/null", "--server", up.address, "--certificate-authority", join(up.dataDir, "pki", "ca.crt"), "--token", token, ...args], { encoding: "utf8", stdio: ["pipe", "pipe", "pipe"], timeout: 30_000 });
    expect(JSON.parse(asNode(["auth", "whoami", "-o", "json"])).status.userInfo.groups).toEqual(["system:bootstrappers", "system:bootstrappers:workers", "system:authenticated"]);
    // A TokenReview takes it as a request does (upstream's review runs the request authenticators), for the API
    // server's audiences only; once deleted, it is refused there too.
    const review = (audiences?: string[]) => JSON.parse(kubectl(["create", "-f", "-", "-o", "json"], JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, ...(audiences && { audiences }) } }))).status;
    expect(review()).toMatchObject({ authenticated: true, user: { username: `system:bootstrap:${id}`, groups: ["system:bootstrappers", "system:bootstrappers:workers", "system:authenticated"] } });
    expect(review(["vault"])).toMatchObject({ authenticated: false, error: "the token is not valid for the requested audiences" });
    expect(tokenCli(["delete", token])).toBe(`bootstrap token "${id}" deleted\n`);
    expect(kubectlFails(Object.assign(asNode, { baseArgs: [] }), ["auth", "whoami"])).toMatch(/Unauthorized/);
    expect(review()).toMatchObject({ authenticated: false, error: "invalid bootstrap token" });
  });

  it("joins a node with platform-ca token create --print-join-command, platform-ca join and platform-ca credential: a client certificate from the token alone", () => {
    const cli = (args: readonly string[], cwd?: string) => execFileSync(process.execPath, [PLATFORM_CA, ...args], { encoding: "utf8", timeout: 60_000, ...(cwd && { cwd }), stdio: ["ignore", "pipe", "pipe"] });
    const printed = spawnSync(process.execPath, [PLATFORM_CA, "token", "create", "--print-join-command", "--platformconfig", up.adminConfig, "--group-suffix", "k8s.io"], { encoding: "utf8", timeout: 60_000 });
    // Anonymous reads of cluster-info are on here: no warning beside the command.
    expect([printed.status, printed.stderr]).toEqual([0, ""]);
    const command = printed.stdout.trim();
    const m = /^platform-ca join (https:\/\/\S+) --token ([a-z0-9]{6}\.[a-z0-9]{16}) --discovery-token-ca-cert-hash (sha256:[0-9a-f]{64}) -o bootstrap\.conf --group-suffix k8s\.io$/.exec(command);
    expect(m, command).not.toBeNull();
    const [, server, token, pin] = m!;
    expect(server).toBe(up.address);
    // The pin is kubeadm's: the SHA-256 of the CA's SubjectPublicKeyInfo, as openssl computes it.
    const caFile = join(up.dataDir, "pki", "ca.crt");
    const spki = execFileSync("sh", ["-c", `openssl x509 -in '${caFile}' -noout -pubkey | openssl pkey -pubin -outform der | sha256sum`], { encoding: "utf8" }).split(" ")[0];
    expect(pin).toBe(`sha256:${spki}`);
    const node = mkdtempSync(join(tmpdir(), "node-"));
    // A wrong pin: refused with one line, nothing written.
    expect(() => cli(["join", server!, "--token", token!, "--discovery-token-ca-cert-hash", `sha256:${"0".repeat(64)}`, "-o", "bootstrap.conf", "--group-suffix", "k8s.io"], node)).toThrow(/matches none of the --discovery-token-ca-cert-hash pins/);
    expect(existsSync(join(node, "bootstrap.conf"))).toBe(false);
    cli(command.replace(/^platform-ca /, "").split(" "), node);
    // The node's first client certificate, through the credential plugin with the bootstrap config.
    const credential = JSON.parse(cli(["credential", "--platformconfig", "bootstrap.conf", "--cn", "system:node:joined-1", "--o", "system:nodes", "--signer-name", "kubernetes.io/kube-apiserver-client-kubelet", "--group-suffix", "k8s.io", "--cache-dir", "cache"], node)) as { status: { clientCertificateData: string } };
    const certFile = join(node, "node.crt");
    writeFileSync(certFile, credential.status.clientCertificateData);
    expect(execFileSync("openssl", ["verify", "-CAfile", caFile, certFile], { encoding: "utf8" }).trim()).toBe(`${certFile}: OK`);
    expect(execFileSync("openssl", ["x509", "-in", certFile, "-noout", "-subject"], { encoding: "utf8" })).toMatch(/O ?= ?system:nodes, CN ?= ?system:node:joined-1/);
    cli(["token", "delete", token!, "--platformconfig", up.adminConfig, "--group-suffix", "k8s.io"]);
  });

  it("describes a CSR with the controllers' Events (kubectl reads them from core /api/v1/events), as platformctl does", async () => {
    kubectl(["create", "-f", "-"], JSON.stringify(await csrBody("described", clientSigner)));
    kubectl(["certificate", "approve", "described"]);
    const described = await eventually("the CertificateIssued Event in kubectl describe", () => {
      const out = kubectl(["describe", "csr", "described"]);
      return /CertificateIssued/.test(out) ? out : undefined;
    });
    expect(described).toMatch(/^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n[\s-]+\n\s+Normal\s+CertificateIssued\s+\S+\s+platform-ca-controller-manager\s+certificate issued by /m);
    const events = kubectl(["get", "events", "-A"]);
    expect(events).toMatch(/^NAMESPACE\s+LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
    expect(events).toMatch(/Normal\s+CertificateIssued\s+certificatesigningrequest\/described\s+certificate issued by/);
    const home = mkdtempSync(join(tmpdir(), "platformctl-home-"));
    expect(platformctl(["describe", "csr", "described"], home)).toMatch(/^Events:\n[\s\S]*Normal\s+CertificateIssued\s/m);
    // Another CSR's Events are not this one's: the server selects by the regarding object.
    expect(platformctl(["describe", "csr", "kubectl-approve"], home)).toMatch(/^Events:\s+<none>$/m);
  });
});

describe("kubectl describe under the default suffix", () => {
  let plain: UpProcess;
  let k: Kubectl;
  beforeAll(async () => {
    plain = await startUp({ args: ["--enable-bootstrap-token-auth"] });
    k = kubectlWith(plain.adminConfig);
  }, 240_000);
  afterAll(async () => {
    if (plain?.child.exitCode === null) expect(await plain.stop()).toBe(0);
  });

  it("lists the controllers' Events of a certificates.platform.io CSR (kubectl's generic describer)", async () => {
    const signer = await eventually("the published client signer", () =>
      k(["get", "clustertrustbundles", "-o", "jsonpath={.items[*].spec.signerName}"]).split(" ").find((n) => /apiserver-client$/.test(n)),
    );
    const body = { ...(await csrBody("plain", signer)), apiVersion: "certificates.platform.io/v1" };
    k(["create", "-f", "-"], JSON.stringify(body));
    // kubectl certificate approve knows only certificates.k8s.io: the approval subresource is patched instead.
    k(["patch", "csr", "plain", "--subresource", "approval", "--type", "merge", "-p", '{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Test","message":"ok"}]}}']);
    const out = await eventually("the CertificateIssued Event", () => {
      const text = k(["describe", "csr", "plain"]);
      return /CertificateIssued/.test(text) ? text : undefined;
    });
    expect(out).toMatch(/^Events:\n[\s\S]*Normal\s+CertificateIssued\s+\S+\s+platform-ca-controller-manager\s/m);
  });

  it("publishes cluster-info in platform-public, readable by system:anonymous only where anonymous access is turned on (it is not here: 401)", async () => {
    const data = JSON.parse(k(["get", "configmap", "cluster-info", "-n", "platform-public", "-o", "json"])).data as Record<string, string>;
    expect(Object.keys(data)).toEqual(["kubeconfig"]);
    expect(parseYaml(data.kubeconfig!).clusters[0].cluster.server).toBe(plain.address);
    // Asked with a SubjectAccessReview (kubectl's --as would need discovery documents anonymous may not read).
    const allowed = (name: string) =>
      k(["create", "-f", "-", "-o", "jsonpath={.status.allowed}"], JSON.stringify({
        apiVersion: "authorization.platform.io/v1",
        kind: "SubjectAccessReview",
        spec: { user: "system:anonymous", groups: ["system:unauthenticated"], resourceAttributes: { namespace: "platform-public", verb: "get", resource: "configmaps", name } },
      }));
    expect(allowed("cluster-info")).toBe("true");
    expect(allowed("platform-root-ca.crt")).toBe("false");
    // Anonymous access is off by default: the server refuses the request before authorization.
    expect(execFileSync("curl", ["-sk", "-o", "/dev/null", "-w", "%{http_code}", `${plain.address}/api/v1/namespaces/platform-public/configmaps/cluster-info`], { encoding: "utf8" })).toBe("401");
    // platform-ca join says what to change.
    const token = execFileSync(process.execPath, [PLATFORM_CA, "token", "create", "--platformconfig", plain.adminConfig], { encoding: "utf8" }).trim();
    expect(() =>
      execFileSync(process.execPath, [PLATFORM_CA, "join", plain.address, "--token", token, "--discovery-token-unsafe-skip-ca-verification", "-o", join(tmpdir(), `never-${process.pid}.conf`)], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }),
    ).toThrow(/does not let requests without credentials read \/api\/v1\/namespaces\/platform-public\/configmaps\/cluster-info: allow anonymous requests on that path/);
    // And token create says it beside the join command it prints, which stays the only line on stdout.
    const printed = spawnSync(process.execPath, [PLATFORM_CA, "token", "create", "--print-join-command", "--platformconfig", plain.adminConfig], { encoding: "utf8", timeout: 60_000 });
    expect(printed.status).toBe(0);
    expect(printed.stdout).toMatch(/^platform-ca join https:\/\/\S+ --token [a-z0-9]{6}\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} -o bootstrap\.conf\n$/);
    expect(printed.stderr).toBe(
      `Warning: the join command fails as the server stands: ${plain.address} does not let requests without credentials read /api/v1/namespaces/platform-public/configmaps/cluster-info: allow anonymous requests on that path (an AuthenticationConfiguration's anonymous.conditions; docs/operations.md "Discovery")\n`,
    );
  });
});

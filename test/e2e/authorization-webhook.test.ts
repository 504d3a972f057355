// `platform-ca up --authorization-config` as a real process with a policy webhook started by the test (the example of
// docs/authorization.md): RBAC lets two approvers approve a signer, the webhook refuses one of them; kubectl sees it.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { groupNames } from "../../src/api/group.js";
import { reviewAnswer, startTestWebhookServer, type TestWebhookServer } from "../../src/testing.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { runCli } from "../cli/fixtures.js";
import { ensureBuilt, kubectlWith, type Kubectl } from "./apiserver-process.js";
import { kubeconfigFor, startUp, type UpProcess } from "./up-process.js";

const SIGNER = "example.com/team";

/**
 * kubectl as a user the webhook is asked about: run asynchronously, since the webhook answers from this process (a
 * synchronous run would block it). Resolves with stdout and the exit code, stderr appended.
 */
async function kubectlAs(k: Kubectl, args: readonly string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await promisify(execFile)("kubectl", [...k.baseArgs, "--request-timeout", "20s", ...args], { encoding: "utf8", timeout: 30_000 });
    return { code: 0, out: r.stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** The policy service: dave may not approve for example.com signers nor list CSRs; about everything else it has no opinion. */
function policy(body: unknown): unknown {
  const spec = (body as { spec: { user: string; resourceAttributes?: { verb?: string; resource?: string; name?: string } } }).spec;
  const r = spec.resourceAttributes;
  if (spec.user === "dave" && r?.resource === "certificatesigningrequests" && r.verb === "list") return reviewAnswer(body, "status", { allowed: false, denied: true, reason: "dave is on leave" });
  if (spec.user === "dave" && r?.resource === "signers" && r.verb === "approve" && r.name?.startsWith("example.com/")) {
    return reviewAnswer(body, "status", { allowed: false, denied: true, reason: "dave is on leave: approvals of example.com signers are suspended" });
  }
  return reviewAnswer(body, "status", { allowed: false });
}

const RBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: team-approver}
rules:
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [get, list]}
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests/approval], verbs: [update]}
- {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: ["${SIGNER}"], verbs: [approve]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: team-approvers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: team-approver}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: team-approvers}
`;

describe("platform-ca up --authorization-config with a policy webhook", () => {
  let hook: TestWebhookServer;
  let up: UpProcess;
  let admin: Kubectl;
  let carol: Kubectl;
  let dave: Kubectl;
  let auditLog: string;

  beforeAll(async () => {
    ensureBuilt();
    hook = await startTestWebhookServer({ decide: policy, path: "/authorize", token: "webhook-token" });
    const dir = tempDir();
    writeFileSync(join(dir, "policy-webhook.kubeconfig"), hook.clientConfig(), { mode: 0o600 });
    writeFileSync(join(dir, "tokens.csv"), `carol-token,carol,uid-carol,"team-approvers"\ndave-token,dave,uid-dave,"team-approvers"\n`, { mode: 0o600 });
    writeFileSync(join(dir, "authorization.yaml"), stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AuthorizationConfiguration",
      authorizers: [
        {
          type: "Webhook",
          name: "policy",
          webhook: {
            timeout: "3s", authorizedTTL: "5m", unauthorizedTTL: "30s", subjectAccessReviewVersion: "v1", failurePolicy: "Deny",
            connectionInfo: { type: "KubeConfigFile", kubeConfigFile: join(dir, "policy-webhook.kubeconfig") },
            // The policy service only rules on dave: nobody else's requests are sent to it.
            matchConditionSubjectAccessReviewVersion: "v1",
            matchConditions: [{ expression: "has(request.resourceAttributes)" }, { expression: "request.user == 'dave'" }],
          },
        },
        { type: "RBAC", name: "rbac" },
      ],
    }));
    writeFileSync(join(dir, "audit.yaml"), stringify({ apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata", resources: [{ group: "certificates.k8s.io" }] }] }));
    auditLog = join(dir, "audit.log");
    up = await startUp({ args: ["--group-suffix", "k8s.io", "--token-file", join(dir, "tokens.csv"), "--authorization-config", join(dir, "authorization.yaml"), "--audit-policy-file", join(dir, "audit.yaml"), "--audit-log-path", auditLog] });
    admin = kubectlWith(up.adminConfig);
    carol = kubectlWith(kubeconfigFor(up, "carol", { token: "carol-token" }));
    dave = kubectlWith(kubeconfigFor(up, "dave", { token: "dave-token" }));
    admin(["apply", "-f", "-"], RBAC);
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) expect(await up.stop()).toBe(0);
    await hook?.close();
  });

  const request = async (name: string) => {
    admin(["create", "-f", "-"], stringify(csrObject({ names: groupNames("k8s.io"), name, request: (await csr({ cn: name })).pem, signerName: SIGNER })));
  };

  it("lets RBAC allow carol's approval (the webhook has no opinion) and the webhook refuse dave's, though RBAC grants it", async () => {
    await request("for-dave");
    const refused = await kubectlAs(dave, ["certificate", "approve", "for-dave"]);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain(`certificatesigningrequests.certificates.k8s.io "for-dave" is forbidden: user not permitted to approve requests with signerName "${SIGNER}"`);
    await request("for-carol");
    expect((await kubectlAs(carol, ["certificate", "approve", "for-carol"])).out).toContain("certificatesigningrequest.certificates.k8s.io/for-carol approved");
    // The webhook saw dave's question as a SubjectAccessReview of this server's authorization group.
    const asked = hook.requests.map((r) => r.body as { apiVersion: string; spec: { user: string; resourceAttributes?: { verb?: string; name?: string } } });
    expect(asked.some((b) => b.apiVersion === "authorization.k8s.io/v1" && b.spec.user === "dave" && b.spec.resourceAttributes?.verb === "approve" && b.spec.resourceAttributes.name === SIGNER)).toBe(true);
    // The match conditions kept carol's requests away from the webhook.
    expect(asked.filter((b) => b.spec.user !== "dave")).toEqual([]);
  });

  it("lists carol's RBAC rules in `kubectl auth can-i --list`, marked incomplete since the webhook cannot list its own", async () => {
    const r = await promisify(execFile)("kubectl", [...carol.baseArgs, "--request-timeout", "20s", "auth", "can-i", "--list"], { encoding: "utf8", timeout: 30_000 });
    const out = r.stdout;
    expect(out).toMatch(/certificatesigningrequests\.certificates\.k8s\.io\s+\[\]\s+\[\]\s+\[get list\]/);
    expect(out).toMatch(/signers\.certificates\.k8s\.io\s+\[\]\s+\[example\.com\/team\]\s+\[approve\]/);
    // kubectl warns on stderr when the review says the list is incomplete, with its evaluation error.
    expect(r.stderr).toContain('authorizer "policy" does not support user rule resolution');
  });

  it("answers 403 with the webhook's reason when the webhook denies the request itself, and audits who decided", async () => {
    const listed = await kubectlAs(dave, ["get", "csr"]);
    expect(listed.code).toBe(1);
    expect(listed.out).toContain('User "dave" cannot list resource "certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope: dave is on leave');
    const events = readFileSync(auditLog, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { user?: { username?: string }; verb: string; objectRef?: { subresource?: string }; stage: string; annotations?: Record<string, string> });
    const completed = (user: string, verb: string) => events.find((e) => e.user?.username === user && e.verb === verb && e.stage === "ResponseComplete");
    expect(completed("dave", "list")?.annotations).toMatchObject({ "authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": "dave is on leave", "authorization.k8s.io/authorizer": "policy" });
    expect(completed("carol", "update")?.annotations).toMatchObject({ "authorization.k8s.io/decision": "allow", "authorization.k8s.io/authorizer": "rbac" });
  });

  it("never sends the administrator (system:masters) to the webhook: the privileged group is decided first", () => {
    expect(admin(["get", "csr", "-o", "name"])).toContain("for-carol");
    expect(hook.requests.length).toBeGreaterThan(0);
    expect(hook.requests.some((r) => (r.body as { spec: { user: string } }).spec.user === "platform-ca:admin")).toBe(false);
  });

  it("counts the webhook's calls per authorizer name in /metrics, under upstream's names", () => {
    const text = admin(["get", "--raw", "/metrics"]);
    const calls = Number(/^apiserver_authorization_webhook_evaluations_total\{name="policy",result="success"\} (\d+)$/m.exec(text)?.[1]);
    // Every review the webhook received is one counted call (answers from the cache are neither).
    expect(calls).toBe(hook.requests.length);
    expect(text).toMatch(/^apiserver_authorization_webhook_duration_seconds_count\{name="policy",result="success"\} \d+$/m);
  });

  // Last: the call it cuts short is counted as a timeout, not a success.
  it("answers 504 Timeout at the request's own timeout, audited so, and ends the slow webhook's call then (its failure policy is logged)", async () => {
    hook.delayMs = 4000;
    try {
      const started = Date.now();
      // The webhook's own timeout is 3s; the request's is 1s.
      // kubectl would replace the parameter with its own --request-timeout: 0 sends none.
      const uri = "/apis/certificates.k8s.io/v1/certificatesigningrequests/for-carol?timeout=1s";
      const r = await kubectlAs(dave, ["--request-timeout", "0", "get", "--raw", uri]);
      expect(Date.now() - started).toBeLessThan(2900);
      expect(r.code).toBe(1);
      expect(r.out).toContain("Error from server (Timeout): Timeout: request did not complete within the allotted timeout");
      // Deny refused after the answer: the server logs it as upstream's post-timeout activity.
      const line = await until(() => up.stderr().split("\n").find((l) => l.includes("post-timeout activity") && l.includes(uri)), "the post-timeout log line");
      expect(JSON.parse(line).err.message).toContain(`webhook authorizer "policy" failed (failurePolicy Deny): the request's deadline (timeout 1s) passed`);
      const events = readFileSync(auditLog, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { requestURI: string; stage: string; responseStatus?: unknown });
      expect(events.filter((e) => e.requestURI === uri && e.stage === "ResponseComplete").map((e) => e.responseStatus)).toEqual([
        { metadata: {}, status: "Failure", message: "Timeout: request did not complete within the allotted timeout", reason: "Timeout", code: 504 },
      ]);
    } finally {
      hook.delayMs = 0;
    }
  });
});

describe("platform-ca up --authorization-config: a bad file", () => {
  it.each([
    ["an invalid file", (dir: string) => ({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers: [{ type: "RBAC", name: "RBAC" }] }), /invalid authorization configuration .*: expected `authorizers\[0\]\.name` to be a valid authorizer name/],
    ["a webhook whose client config file is unusable", (dir: string) => {
      writeFileSync(join(dir, "empty.kubeconfig"), "apiVersion: v1\nkind: Config\n");
      const webhook = { timeout: "3s", authorizedTTL: "5m", unauthorizedTTL: "30s", subjectAccessReviewVersion: "v1", failurePolicy: "Deny", connectionInfo: { type: "KubeConfigFile", kubeConfigFile: join(dir, "empty.kubeconfig") } };
      return { apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers: [{ type: "Webhook", name: "policy", webhook }] };
    }, /invalid authorization configuration .*: `authorizers\[0\]\.webhook\.connectionInfo\.kubeConfigFile`: invalid client config file of authorizer "policy"/],
    ["a match condition that does not compile", (dir: string) => {
      writeFileSync(join(dir, "empty.kubeconfig"), "apiVersion: v1\nkind: Config\n");
      const webhook = { timeout: "3s", authorizedTTL: "5m", unauthorizedTTL: "30s", subjectAccessReviewVersion: "v1", failurePolicy: "Deny", connectionInfo: { type: "KubeConfigFile", kubeConfigFile: join(dir, "empty.kubeconfig") }, matchConditionSubjectAccessReviewVersion: "v1", matchConditions: [{ expression: "request.usr == 'dave'" }] };
      return { apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers: [{ type: "Webhook", name: "policy", webhook }] };
    }, /invalid authorization configuration .*: expected `authorizers\[0\]\.webhook\.matchConditions\[0\]\.expression` a CEL expression that compiles \(type error: No such key: usr at line 1, column 9\), got "request\.usr == 'dave'"/],
  ])("refuses %s in one line, exit 1, before the data directory is created", async (_what, doc, message) => {
    ensureBuilt();
    const dir = tempDir();
    writeFileSync(join(dir, "authorization.yaml"), stringify(doc(dir)));
    const r = await runCli(["up", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", "--authorization-config", join(dir, "authorization.yaml")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(existsSync(join(dir, "data"))).toBe(false);
  }, 60_000);
});

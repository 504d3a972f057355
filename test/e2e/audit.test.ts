// `platform-ca up` with an audit policy and log: a CSR created by one user, approved by another and issued by the
// controllers, read back from the log; and a bad policy that stops the start before anything is created.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { ADMIN_USER } from "../../src/apiserver/bootstrap/admin-config.js";
import type { AuditEvent } from "../../src/audit/event.js";
import { runCli } from "../cli/fixtures.js";
import { CTL, runNode } from "../cli/ctl/fixtures.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { ensureBuilt, type Kubectl, kubectlFails, kubectlWith } from "./apiserver-process.js";
import { kubeconfigFor, startUp, type UpProcess } from "./up-process.js";

const CERTS = "certificates.platform.io";
const ALICE_TOKEN = "alice-secret-token-0123456789";
const POLICY = {
  apiVersion: "audit.platform.io/v1",
  kind: "Policy",
  omitStages: [],
  rules: [
    { level: "None", nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"] },
    { level: "RequestResponse", resources: [{ group: CERTS, resources: ["certificatesigningrequests/approval", "certificatesigningrequests/status"] }], omitManagedFields: true },
    { level: "Request", verbs: ["create"], resources: [{ group: CERTS, resources: ["certificatesigningrequests"] }] },
    { level: "Metadata", resources: [{ group: CERTS }] },
    { level: "Metadata", omitStages: ["RequestReceived"] },
  ],
};

describe("platform-ca up --audit-policy-file --audit-log-path", () => {
  let up: UpProcess;
  let admin: Kubectl;
  let alice: Kubectl;
  let logPath: string;
  let privateKey: string;

  beforeAll(async () => {
    ensureBuilt();
    const dir = tempDir();
    const policyPath = join(dir, "policy.yaml");
    writeFileSync(policyPath, stringify(POLICY));
    writeFileSync(join(dir, "tokens.csv"), `${ALICE_TOKEN},alice,uid-alice,"system:masters"\n`, { mode: 0o600 });
    logPath = join(dir, "audit", "audit.log");
    up = await startUp({ dataDir: join(dir, "data"), args: ["--token-file", join(dir, "tokens.csv"), "--audit-policy-file", policyPath, "--audit-log-path", logPath, "--audit-log-maxbackup", "2"] });
    admin = kubectlWith(up.adminConfig);
    alice = kubectlWith(kubeconfigFor(up, "alice", { token: ALICE_TOKEN }));
    const request = await csr({ cn: "audited-client" });
    privateKey = request.keyPem;
    alice(["create", "-f", "-"], JSON.stringify(csrObject({ name: "audited", request: request.pem, signerName: "platform.io/apiserver-client" })));
    // kubectl's `certificate approve` knows only certificates.k8s.io: platformctl approves under this suffix.
    const approved = await runNode(CTL, ["--platformconfig", up.adminConfig, "certificate", "approve", "audited"], { env: { HOME: dir } });
    expect(approved.stderr).toBe("");
    for (let i = 0; i < 100 && admin(["get", "csr", "audited", "-o", "jsonpath={.status.certificate}"]) === ""; i++) await new Promise((r) => setTimeout(r, 100));
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
  });

  const events = (): AuditEvent[] => readFileSync(logPath, "utf8").trim().split("\n").map((l) => JSON.parse(l) as AuditEvent);
  const about = (verb: string, subresource?: string) =>
    events().filter((e) => e.objectRef?.name === "audited" && e.verb === verb && e.objectRef.subresource === subresource && e.responseStatus?.code !== 409);

  it("records the create by its requester at Request level: the request body, never the response", () => {
    const create = about("create");
    expect(create.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(new Set(create.map((e) => e.auditID)).size).toBe(1);
    for (const e of create) {
      expect(e).toMatchObject({ level: "Request", user: { username: "alice", uid: "uid-alice" }, objectRef: { resource: "certificatesigningrequests", name: "audited", apiGroup: CERTS, apiVersion: "v1" }, annotations: { "authentication.platform.io/authenticator": "token-file" } });
      expect(e.responseObject).toBeUndefined();
      expect(e.userAgent).toMatch(/^kubectl/);
      expect(e.sourceIPs).toEqual(["127.0.0.1"]);
    }
    expect(create[0]!.requestObject).toBeUndefined();
    expect((create[1]!.requestObject as any).spec.signerName).toBe("platform.io/apiserver-client");
    expect(create[1]).toMatchObject({ responseStatus: { code: 201 }, annotations: { "authorization.platform.io/decision": "allow" } });
  });

  it("records the approval by the approver and the certificate written by the signer, with both bodies", () => {
    const approval = about("update", "approval");
    expect(approval.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(approval[1]).toMatchObject({ level: "RequestResponse", user: { username: ADMIN_USER }, responseStatus: { code: 200 } });
    // Who approved by which credential, for which signer, and against which version of which object.
    const created = (about("create")[1]!.responseObject ?? JSON.parse(admin(["get", "csr", "audited", "-o", "json"]))) as { metadata: { uid: string } };
    expect(approval[1]!.objectRef).toMatchObject({ name: "audited", subresource: "approval", uid: created.metadata.uid });
    expect(approval[1]!.objectRef!.resourceVersion).toMatch(/^\d+$/);
    expect(approval[1]!.annotations).toEqual({
      "authentication.platform.io/authenticator": "x509",
      "authorization.platform.io/decision": "allow",
      "authorization.platform.io/reason": expect.any(String),
      "certificateapproval.admission.platform.io/signer-name": "platform.io/apiserver-client",
    });
    expect((approval[1]!.requestObject as any).status.conditions[0].type).toBe("Approved");
    expect((approval[1]!.responseObject as any).metadata.managedFields).toBeUndefined();
    const status = about("update", "status");
    expect(status.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(status[1]!.level).toBe("RequestResponse");
    // Written by the signing controller, which `up` runs with admin.conf's identity, for that signer.
    expect(status[1]!.user.username).toBe(ADMIN_USER);
    expect(status[1]!.userAgent).not.toBe(approval[1]!.userAgent);
    expect(status[1]!.annotations).toMatchObject({ "authentication.platform.io/authenticator": "x509", "certificatesigning.admission.platform.io/signer-name": "platform.io/apiserver-client" });
    expect(Buffer.from((status[1]!.responseObject as any).status.certificate, "base64").toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it("writes one event per stage: ResponseStarted only for watches, every auditID echoed once per stage", () => {
    const all = events();
    const seen = new Set<string>();
    for (const e of all) {
      const key = `${e.auditID} ${e.stage}`;
      expect(seen.has(key), key).toBe(false);
      seen.add(key);
      if (e.stage === "ResponseStarted") expect(e.verb).toBe("watch");
    }
    expect(all.some((e) => e.verb === "watch" && e.stage === "ResponseStarted" && e.objectRef?.resource === "certificatesigningrequests")).toBe(true);
    // The catch-all rule omits RequestReceived.
    expect(all.filter((e) => e.objectRef?.apiGroup !== CERTS && e.stage === "RequestReceived")).toEqual([]);
  });

  it("holds no private key and no token, in a file only its owner reads", () => {
    const text = readFileSync(logPath, "utf8");
    expect(text).not.toContain("PRIVATE KEY");
    expect(text).not.toContain(privateKey.split("\n")[1]);
    expect(text).not.toContain(ALICE_TOKEN);
    expect(text).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+/);
    expect(statSync(logPath).mode & 0o777).toBe(0o600);
  });
});

describe("platform-ca up: bad audit flags stop the start before anything is created", () => {
  beforeAll(() => ensureBuilt(), 240_000);

  it.each([
    ["a wrong apiVersion", { ...POLICY, apiVersion: "audit.k8s.io/v1" }, [], /invalid audit policy .*policy\.yaml: expected `apiVersion` "audit\.platform\.io\/v1", got "audit\.k8s\.io\/v1"/],
    ["an unknown field", { ...POLICY, rules: [{ level: "Metadata", verb: ["get"] }] }, [], /unknown field `rules\[0\]\.verb`; did you mean `verbs`\?|unknown field `rules\[0\]\.verb`/],
    ["an invalid level", { ...POLICY, rules: [{ level: "All" }] }, [], /expected `rules\[0\]\.level` one of None, Metadata, Request, RequestResponse, got "All"/],
    ["the legacy log format", POLICY, ["--audit-log-format", "legacy"], /expected `--audit-log-format` to be json, got "legacy"/],
    ["a negative maxage", POLICY, ["--audit-log-maxage", "-1"], /expected `--audit-log-maxage` to be a whole number ≥ 0, got "-1"/],
    ["a missing webhook config file", POLICY, ["--audit-webhook-config-file", "/nonexistent/webhook.yaml"], /invalid audit webhook config \/nonexistent\/webhook\.yaml: client config \/nonexistent\/webhook\.yaml does not exist/],
    ["an unknown webhook mode", POLICY, ["--audit-webhook-mode", "async"], /argument 'async' is invalid\. Allowed choices are batch, blocking, blocking-strict/],
    ["a zero webhook buffer", POLICY, ["--audit-webhook-batch-buffer-size", "0"], /expected `--audit-webhook-batch-buffer-size` to be a whole number ≥ 1, got "0"/],
    ["a webhook wait that is not a duration", POLICY, ["--audit-webhook-batch-max-wait", "soon"], /expected `--audit-webhook-batch-max-wait` to be a duration such as .*, got "soon"/],
    ["another webhook version", POLICY, ["--audit-webhook-version", "audit.k8s.io/v1"], /expected `--audit-webhook-version` to be audit\.platform\.io\/v1, got "audit\.k8s\.io\/v1"/],
  ])("refuses %s", async (_name, policy, extra, message) => {
    const dir = tempDir();
    writeFileSync(join(dir, "policy.yaml"), stringify(policy));
    const r = await runCli(["up", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", "--audit-policy-file", join(dir, "policy.yaml"), "--audit-log-path", join(dir, "audit.log"), ...extra]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(existsSync(join(dir, "data"))).toBe(false);
    expect(existsSync(join(dir, "audit.log"))).toBe(false);
  });

  it("refuses an unreadable policy file", async () => {
    const dir = tempDir();
    const r = await runCli(["apiserver", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", "--audit-policy-file", join(dir, "missing.yaml"), "--audit-log-path", join(dir, "audit.log")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: cannot read audit policy .*missing\.yaml: ENOENT/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });
});

describe("platform-ca up: an audit log whose writes fail (a full disk) fails the audited requests, never drops their events silently", () => {
  let up: UpProcess;
  let admin: Kubectl;
  let alice: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    const dir = tempDir();
    writeFileSync(join(dir, "policy.yaml"), stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata", users: ["alice"], verbs: ["create"] }] }));
    writeFileSync(join(dir, "tokens.csv"), `${ALICE_TOKEN},alice,uid-alice,"system:masters"\n`, { mode: 0o600 });
    // /dev/full opens like any file (the start-up check passes) and answers every write with ENOSPC.
    up = await startUp({ dataDir: join(dir, "data"), args: ["--token-file", join(dir, "tokens.csv"), "--audit-policy-file", join(dir, "policy.yaml"), "--audit-log-path", "/dev/full"] });
    admin = kubectlWith(up.adminConfig);
    alice = kubectlWith(kubeconfigFor(up, "alice", { token: ALICE_TOKEN }));
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
  });

  it("answers an audited create 500 without carrying it out, counts it, and logs why", async () => {
    const request = await csr({ cn: "never-created" });
    const err = kubectlFails(alice, ["create", "-f", "-"], JSON.stringify(csrObject({ name: "never-created", request: request.pem, signerName: "platform.io/apiserver-client" })));
    expect(err).toMatch(/failed to store the audit event/);
    expect(kubectlFails(admin, ["get", "csr", "never-created"])).toMatch(/NotFound|not found/);
    const metrics = admin(["get", "--raw", "/metrics"]);
    expect(metrics).toMatch(/^apiserver_audit_error_total\{plugin="log"\} [1-9]/m);
    expect(metrics).toMatch(/^apiserver_audit_requests_rejected_total [1-9]/m);
    // The server's log is written asynchronously: give it a moment.
    const logged = /audit events could not be stored/;
    for (let i = 0; i < 50 && !logged.test(up.stderr()); i++) await new Promise((r) => setTimeout(r, 100));
    expect(up.stderr().split("\n").find((l) => logged.test(l))).toMatch(/"plugin":"log".*ENOSPC/);
    // Requests the policy does not audit are served as before.
    expect(admin(["get", "csr", "-o", "name"])).toBeDefined();
  });
});

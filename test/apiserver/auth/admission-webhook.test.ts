// Admission webhooks against a real HTTPS webhook: AdmissionReview contents, patches, denials, failure policies,
// upstream's refusals of bad answers, rules and selectors, reinvocation, warnings and audit annotations.
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AdmissionChain, type AdmissionAttributes } from "../../../src/apiserver/auth/admission.js";
import { admissionPlugins } from "../../../src/apiserver/auth/admission-plugins.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { statusOf } from "../../../src/apiserver/http/status.js";
import { requestDeadline } from "../../../src/apiserver/webhook/deadline.js";
import { enabledAdmissionPlugins, loadAdmissionConfig } from "../../../src/config/admission-config.js";
import { createTestPki } from "../../client/fixtures/pki.js";
import { startServer } from "../../client/fixtures/server.js";
import { jsonPatch, startAdmissionWebhook, writeWebhookManifest, type TestAdmissionWebhook, type WebhookManifest } from "../../fixtures/admission-webhook.js";
import { csrObject } from "../../fixtures/csr.js";
import { tempDir, writeFiles } from "../../fixtures/temp-dir.js";
import { names, refusal, StaticLister, user } from "./fixtures.js";

const FORBIDDEN_SIGNER = "example.com/forbidden";
const NAMESPACES: Record<string, Record<string, string>> = { team: { policy: "strict" }, other: {} };
let hook: TestAdmissionWebhook;

/** The test webhook's behaviour by path: /label adds a label, /signer refuses the forbidden signer, others as set. */
beforeAll(async () => {
  hook = await startAdmissionWebhook(defaultRespond);
});
afterAll(() => hook.close());
beforeEach(() => {
  hook.respond = defaultRespond;
  hook.reviews.length = 0;
});

function defaultRespond(request: { object?: { metadata: { labels?: Record<string, string> }; spec?: Record<string, unknown> } | null }, path: string): Record<string, unknown> {
  if (path === "/label") {
    const labels = request.object?.metadata.labels;
    if (labels?.["reviewed"] === "yes") return { allowed: true };
    return { allowed: true, ...jsonPatch(labels ? [{ op: "add", path: "/metadata/labels/reviewed", value: "yes" }] : [{ op: "add", path: "/metadata/labels", value: { reviewed: "yes" } }]) };
  }
  if (path === "/signer" && request.object?.spec?.signerName === FORBIDDEN_SIGNER) {
    return { allowed: false, status: { code: 403, message: `signer ${FORBIDDEN_SIGNER} is not allowed` }, warnings: ["signer refused"] };
  }
  return { allowed: true };
}

/** A chain with the given webhooks, loaded through an AdmissionConfiguration file as the server loads it. */
async function chainWith(mutating: readonly WebhookManifest[], validating: readonly WebhookManifest[], kubeConfig?: string): Promise<AdmissionChain> {
  const dir = tempDir();
  if (kubeConfig) writeFiles(dir, { "webhooks.conf": kubeConfig });
  const plugins: object[] = [];
  for (const [phase, list] of [["Mutating", mutating], ["Validating", validating]] as const) {
    if (list.length === 0) continue;
    const manifests = join(dir, phase.toLowerCase());
    writeWebhookManifest(manifests, "hooks", phase, list);
    plugins.push({ name: `${phase}AdmissionWebhook`, configuration: { apiVersion: "apiserver.config.platform.io/v1", kind: "WebhookAdmissionConfiguration", kubeConfigFile: kubeConfig ? "webhooks.conf" : "", staticManifestsDir: manifests } });
  }
  writeFiles(dir, { "admission.yaml": JSON.stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins }) });
  const file = await loadAdmissionConfig(join(dir, "admission.yaml"));
  // The webhook plugins alone: the built-in CSR checks are tested elsewhere.
  const built = admissionPlugins(enabledAdmissionPlugins({ file }).filter((p) => p.endsWith("AdmissionWebhook")), { configs: file.configs, webhooks: { namespaceLabels: async (ns) => NAMESPACES[ns] } });
  return new AdmissionChain({ names, authorizer: new RbacAuthorizer({ names, lister: new StaticLister({}) }), ...built });
}

const on = (path: string, o: Partial<WebhookManifest> = {}): WebhookManifest => ({ name: `${path.slice(1)}.hooks.example.com`, url: `${hook.url}${path}`, caBundle: hook.caBundle, ...o });

interface Seen {
  annotations: Record<string, string>;
  warnings: string[];
}

function attrs(seen: Seen, o: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return {
    operation: "CREATE",
    group: names.certificates,
    version: "v1",
    resource: "certificatesigningrequests",
    kind: "CertificateSigningRequest",
    name: "csr-1",
    user: user({ username: "carol", groups: ["devs", "system:authenticated"] }),
    dryRun: false,
    annotate: (k, v) => void (seen.annotations[k] = v),
    warn: (t) => void seen.warnings.push(t),
    ...o,
  };
}

describe("admission webhooks", () => {
  it("a mutating webhook labels every CSR and a validating one refuses a forbidden signer, with upstream's message and code", async () => {
    const chain = await chainWith([on("/label")], [on("/signer")]);
    const seen: Seen = { annotations: {}, warnings: [] };
    const ok = csrObject();
    await chain.admit(attrs(seen), ok, undefined);
    expect(ok.metadata.labels).toEqual({ reviewed: "yes" });
    // The validating webhook saw the mutated object.
    expect(hook.reviews.find((r) => r.path === "/signer")?.request.object?.metadata.labels).toEqual({ reviewed: "yes" });
    const err = await refusal(chain.admit(attrs(seen), csrObject({ signerName: FORBIDDEN_SIGNER }), undefined));
    expect(err.code).toBe("FORBIDDEN");
    expect(err.httpStatus).toBe(403);
    expect(err.message).toBe(`admission webhook "signer.hooks.example.com" denied the request: signer ${FORBIDDEN_SIGNER} is not allowed`);
    expect(seen.warnings).toEqual(["signer refused"]);
  });

  it("sends AdmissionReview v1 with upstream's request fields, oldObject on UPDATE, dryRun and options", async () => {
    const chain = await chainWith([], [on("/record", { rules: [{ operations: ["*"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }] })]);
    const seen: Seen = { annotations: {}, warnings: [] };
    const old = csrObject();
    await chain.admit(attrs(seen, { operation: "UPDATE", dryRun: true }), csrObject({ metadata: { labels: { a: "b" } } }), old);
    const r = hook.reviews[0]!.request;
    expect(r.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(r).toMatchObject({
      kind: { group: names.certificates, version: "v1", kind: "CertificateSigningRequest" },
      resource: { group: names.certificates, version: "v1", resource: "certificatesigningrequests" },
      requestKind: { group: names.certificates, version: "v1", kind: "CertificateSigningRequest" },
      name: "csr-1",
      operation: "UPDATE",
      userInfo: { username: "carol", groups: ["devs", "system:authenticated"] },
      oldObject: old,
      dryRun: true,
      options: { apiVersion: "meta.k8s.io/v1", kind: "UpdateOptions", dryRun: ["All"] },
    });
    expect(r.object?.metadata.labels).toEqual({ a: "b" });
    hook.reviews.length = 0;
    await chain.admit(attrs(seen), csrObject(), undefined);
    expect(hook.reviews[0]!.request.oldObject).toBeNull();
    expect(hook.reviews[0]!.request.uid).not.toBe(r.uid);
  });

  it("Fail refuses and Ignore admits (with the failed-open annotation) when the webhook is down", async () => {
    const down = await startAdmissionWebhook(() => ({ allowed: true }));
    const url = `${down.url}/gone`;
    await down.close();
    const fail = await chainWith([], [on("/x", { name: "down.hooks.example.com", url, failurePolicy: "Fail" })]);
    const err = await refusal(fail.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined));
    expect(err.httpStatus).toBe(500);
    expect(err.message).toMatch(/^Internal error occurred: failed calling webhook "down\.hooks\.example\.com": failed to call webhook: .*ECONNREFUSED/);
    const ignore = await chainWith([], [on("/x", { name: "down.hooks.example.com", url, failurePolicy: "Ignore" })]);
    const seen: Seen = { annotations: {}, warnings: [] };
    await ignore.admit(attrs(seen), csrObject(), undefined);
    expect(seen.annotations).toEqual({ "failed-open.validating.webhook.admission.platform.io/round_0_index_0": "down.hooks.example.com" });
  });

  it("matchConditions: all true calls the webhook, any false skips it, an evaluation error follows failurePolicy", async () => {
    const conditions = [
      { name: "not-dry-run", expression: "!request.dryRun" },
      { name: "team-pki", expression: "has(object.metadata.labels) && object.metadata.labels.team == 'pki'" },
      { name: "by-carol", expression: "request.userInfo.username == 'carol'" },
    ];
    const chain = await chainWith([], [on("/signer", { matchConditions: conditions })]);
    const seen: Seen = { annotations: {}, warnings: [] };
    const pki = (o: Record<string, unknown> = {}) => csrObject({ signerName: FORBIDDEN_SIGNER, metadata: { labels: { team: "pki" } }, ...o });
    // Every condition holds: the webhook is called and refuses the forbidden signer.
    expect((await refusal(chain.admit(attrs(seen), pki(), undefined))).message).toContain('admission webhook "signer.hooks.example.com" denied the request');
    expect(hook.reviews).toHaveLength(1);
    // Each false condition alone skips it.
    await chain.admit(attrs(seen, { dryRun: true }), pki(), undefined);
    await chain.admit(attrs(seen), csrObject({ signerName: FORBIDDEN_SIGNER, metadata: { labels: { team: "web" } } }), undefined);
    await chain.admit(attrs(seen, { user: user({ username: "dave" }) }), pki(), undefined);
    expect(hook.reviews).toHaveLength(1);
    // `object.metadata.labels` of an object without labels: has() guards it, so the condition is false.
    await chain.admit(attrs(seen), csrObject({ signerName: FORBIDDEN_SIGNER }), undefined);
    expect(hook.reviews).toHaveLength(1);
    // An unguarded field that is absent fails to evaluate: Fail refuses with upstream's 500, Ignore admits and records it.
    const unguarded = [{ name: "team", expression: "object.metadata.labels.team == 'pki'" }];
    const fail = await chainWith([], [on("/signer", { matchConditions: unguarded })]);
    const err = await refusal(fail.admit(attrs(seen), csrObject(), undefined));
    expect(err.httpStatus).toBe(500);
    expect(err.message).toBe('Internal error occurred: failed calling webhook "signer.hooks.example.com": match condition "team" failed: evaluation failed: No such key: labels');
    const ignored: Seen = { annotations: {}, warnings: [] };
    await (await chainWith([], [on("/signer", { matchConditions: unguarded, failurePolicy: "Ignore" })])).admit(attrs(ignored), csrObject(), undefined);
    expect(ignored.annotations).toEqual({ "failed-open.validating.webhook.admission.platform.io/round_0_index_0": "signer.hooks.example.com" });
    // A false condition wins over one that fails to evaluate.
    await (await chainWith([], [on("/signer", { matchConditions: [...unguarded, { name: "never", expression: "false" }] })])).admit(attrs(seen), csrObject(), undefined);
    expect(hook.reviews).toHaveLength(1);
  });

  it("a webhook slower than timeoutSeconds fails the call", async () => {
    const pki = createTestPki();
    // A webhook that never answers.
    const hold = await startServer(() => undefined, { tls: { cert: pki.server.cert, key: pki.server.key } });
    try {
      const chain = await chainWith([], [{ name: "slow.hooks.example.com", url: `${hold.url}/slow`, caBundle: Buffer.from(pki.ca).toString("base64"), timeoutSeconds: 1 }]);
      const started = Date.now();
      const err = await refusal(chain.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined));
      expect(err.message).toMatch(/failed calling webhook "slow\.hooks\.example\.com": failed to call webhook: .*1000 ms/);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await hold.close();
      pki.remove();
    }
  });

  it("two slow mutating webhooks share the request's deadline: neither waits its own timeoutSeconds, then failurePolicy applies", async () => {
    const pki = createTestPki();
    const hold = await startServer(() => undefined, { tls: { cert: pki.server.cert, key: pki.server.key } });
    const slow = (name: string, failurePolicy: string) => ({ name, url: `${hold.url}/slow`, caBundle: Buffer.from(pki.ca).toString("base64"), timeoutSeconds: 10, failurePolicy });
    try {
      const ignore = await chainWith([slow("slow-a.hooks.example.com", "Ignore"), slow("slow-b.hooks.example.com", "Ignore")], []);
      const seen: Seen = { annotations: {}, warnings: [] };
      const started = Date.now();
      // A 1 s request: the two webhooks' own timeouts would hold it 20 s.
      await ignore.admit(attrs(seen, { deadline: requestDeadline("1s", false)! }), csrObject(), undefined);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(Object.keys(seen.annotations)).toEqual(["failed-open.mutation.webhook.admission.platform.io/round_0_index_0", "failed-open.mutation.webhook.admission.platform.io/round_0_index_1"]);
      const fail = await chainWith([slow("slow-a.hooks.example.com", "Ignore"), slow("slow-b.hooks.example.com", "Fail")], []);
      const err = await refusal(fail.admit(attrs({ annotations: {}, warnings: [] }, { deadline: requestDeadline("1s", false)! }), csrObject(), undefined));
      expect(err.message).toBe(`Internal error occurred: failed calling webhook "slow-b.hooks.example.com": failed to call webhook: the request's deadline (timeout 1s) passed`);
    } finally {
      await hold.close();
      pki.remove();
    }
  });

  it("refuses an answer with the wrong uid, a patch from a validating webhook, or a patch without its type, with upstream's messages", async () => {
    const chain = await chainWith([on("/m")], [on("/v")]);
    const cases: [string, (req: { uid: string }, path: string) => Record<string, unknown> | { raw: unknown }, RegExp][] = [
      ["wrong uid", (req, path) => (path === "/m" ? { uid: "not-the-uid", allowed: true } : { allowed: true }), /"m\.hooks\.example\.com": received invalid webhook response: expected response\.uid="[0-9a-f-]{36}", got "not-the-uid"$/],
      ["validating patch", (_req, path) => (path === "/v" ? { allowed: true, ...jsonPatch([]) } : { allowed: true }), /"v\.hooks\.example\.com": received invalid webhook response: validating webhook may not return response\.patch or response\.patchType$/],
      ["patch without type", (_req, path) => (path === "/m" ? { allowed: true, patch: jsonPatch([]).patch } : { allowed: true }), /received invalid webhook response: webhook returned response\.patch but not response\.patchType$/],
      ["merge patch", (_req, path) => (path === "/m" ? { allowed: true, patch: jsonPatch([]).patch, patchType: "MergePatch" } : { allowed: true }), /received invalid webhook response: webhook returned invalid response\.patchType of "MergePatch"$/],
      ["no response", (_req, path) => (path === "/m" ? { raw: { apiVersion: "admission.platform.io/v1", kind: "AdmissionReview" } } : { allowed: true }), /received invalid webhook response: webhook response was absent$/],
    ];
    for (const [what, respond, message] of cases) {
      hook.respond = respond as typeof hook.respond;
      const err = await refusal(chain.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined));
      expect(`${what}: ${err.httpStatus} ${err.message}`).toMatch(new RegExp(`^${what}: 500 Internal error occurred: failed calling webhook .*${message.source}`));
    }
  });

  it("denial without a message uses the reason, else says so; the webhook's code ≥ 400 is kept", async () => {
    const chain = await chainWith([], [on("/v")]);
    hook.respond = () => ({ allowed: false, status: { code: 422, reason: "Invalid" } });
    let err = await refusal(chain.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined));
    expect([err.httpStatus, err.message]).toEqual([422, 'admission webhook "v.hooks.example.com" denied the request: Invalid']);
    hook.respond = () => ({ allowed: false, status: { code: 200 } });
    err = await refusal(chain.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined));
    expect([err.httpStatus, err.message]).toEqual([403, 'admission webhook "v.hooks.example.com" denied the request without explanation']);
  });

  it("the webhook's own status.code and status.reason reach the client's Status, as upstream's ToStatusErr", async () => {
    const chain = await chainWith([], [on("/v")]);
    const statusFor = async (status: Record<string, unknown> | undefined) => {
      hook.respond = () => ({ allowed: false, ...(status && { status }) });
      return statusOf(await refusal(chain.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined)));
    };
    const by = 'admission webhook "v.hooks.example.com" denied the request';
    const details = { group: names.certificates, kind: "certificatesigningrequests", name: "csr-1" };
    expect(await statusFor({ code: 409, reason: "AlreadyExists", message: "a CSR for this signer is pending" })).toMatchObject({ code: 409, reason: "AlreadyExists", message: `${by}: a CSR for this signer is pending`, details });
    expect(await statusFor({ code: 422, reason: "Invalid" })).toMatchObject({ code: 422, reason: "Invalid", message: `${by}: Invalid`, details });
    expect(await statusFor({ code: 403, reason: "SignerNotAllowed" })).toMatchObject({ code: 403, reason: "SignerNotAllowed" });
    // Without a reason: Forbidden whatever the code, except InternalError for a 500 (which has no details).
    expect(await statusFor({ code: 429, message: "slow down" })).toMatchObject({ code: 429, reason: "Forbidden", message: `${by}: slow down` });
    const internal = await statusFor({ code: 500 });
    expect([internal.code, internal.reason, internal.details]).toEqual([500, "InternalError", undefined]);
    expect(await statusFor(undefined)).toMatchObject({ code: 403, reason: "Forbidden", message: `${by} without explanation`, details });
  });

  it("audit annotations are prefixed by the webhook name; long warnings are cut as upstream", async () => {
    const chain = await chainWith([], [on("/v")]);
    const long = "w".repeat(1000);
    hook.respond = () => ({ allowed: true, auditAnnotations: { decision: "ok" }, warnings: [long, long, long, long, long, "short"] });
    const seen: Seen = { annotations: {}, warnings: [] };
    await chain.admit(attrs(seen), csrObject(), undefined);
    expect(seen.annotations).toEqual({ "v.hooks.example.com/decision": "ok" });
    expect(seen.warnings.map((w) => w.length)).toEqual([256, 256, 256, 256, 256, 5]);
  });

  it("rules: operations, resources with */status, scope; objectSelector on the object's labels", async () => {
    const chain = await chainWith([], [
      on("/status", { rules: [{ operations: ["UPDATE"], apiGroups: [names.certificates], apiVersions: ["v1"], resources: ["*/status"], scope: "Cluster" }] }),
      on("/selected", { objectSelector: { matchExpressions: [{ key: "team", operator: "In", values: ["blue"] }] } }),
    ]);
    const seen: Seen = { annotations: {}, warnings: [] };
    await chain.admit(attrs(seen), csrObject(), undefined);
    expect(hook.reviews.map((r) => r.path)).toEqual([]);
    await chain.admit(attrs(seen), csrObject({ metadata: { labels: { team: "blue" } } }), undefined);
    expect(hook.reviews.map((r) => r.path)).toEqual(["/selected"]);
    await chain.admit(attrs(seen, { operation: "UPDATE", subresource: "status" }), csrObject(), csrObject());
    expect(hook.reviews.map((r) => r.path)).toEqual(["/selected", "/status"]);
    expect(hook.reviews[1]!.request.subResource).toBe("status");
    await chain.admit(attrs(seen, { operation: "UPDATE", subresource: "approval" }), csrObject(), csrObject());
    expect(hook.reviews).toHaveLength(2);
  });

  it("namespaceSelector: a namespaced object by its namespace's labels, a cluster-scoped one always", async () => {
    const chain = await chainWith([], [on("/ns", { namespaceSelector: { matchLabels: { policy: "strict" } }, rules: [{ operations: ["CREATE"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }] })]);
    const seen: Seen = { annotations: {}, warnings: [] };
    const event = (namespace: string): Partial<AdmissionAttributes> => ({ group: "", resource: "events", kind: "Event", namespace });
    await chain.admit(attrs(seen, event("other")), csrObject(), undefined);
    await chain.admit(attrs(seen, event("missing")), csrObject(), undefined);
    expect(hook.reviews).toHaveLength(0);
    await chain.admit(attrs(seen, event("team")), csrObject(), undefined);
    await chain.admit(attrs(seen), csrObject(), undefined);
    expect(hook.reviews.map((r) => r.request.namespace ?? "")).toEqual(["team", ""]);
  });

  it("kubeConfigFile: the user named host:port is preferred to \"*\"; a webhook no user names gets no credentials", async () => {
    const host = new URL(hook.url).host;
    const users = (entries: Record<string, string>) => `apiVersion: v1\nkind: Config\nusers:\n${Object.entries(entries).map(([name, token]) => `- name: "${name}"\n  user: {token: ${token}}\n`).join("")}`;
    await (await chainWith([], [on("/v")], users({ "*": "t-star", [host]: "t-exact" }))).admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined);
    await (await chainWith([], [on("/v")], users({ "*.example.com": "t-other" }))).admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined);
    expect(hook.reviews.map((r) => r.authorization ?? "none")).toEqual(["Bearer t-exact", "none"]);
  });

  it("reinvocationPolicy IfNeeded calls a mutating webhook again once a later one changed the object", async () => {
    const chain = await chainWith([on("/first", { reinvocationPolicy: "IfNeeded" }), on("/label")], []);
    const seen: Seen = { annotations: {}, warnings: [] };
    await chain.admit(attrs(seen), csrObject(), undefined);
    expect(hook.reviews.map((r) => r.path)).toEqual(["/first", "/label", "/first"]);
    // Upstream's record of each mutating call.
    const key = (round: number, index: number) => `mutation.webhook.admission.platform.io/round_${round}_index_${index}`;
    expect(seen.annotations).toEqual({
      [key(0, 0)]: JSON.stringify({ configuration: "hooks.static.platform.io", webhook: "first.hooks.example.com", mutated: false }),
      [key(0, 1)]: JSON.stringify({ configuration: "hooks.static.platform.io", webhook: "label.hooks.example.com", mutated: true }),
      [key(1, 0)]: JSON.stringify({ configuration: "hooks.static.platform.io", webhook: "first.hooks.example.com", mutated: false }),
    });
    expect(hook.reviews[2]!.request.object?.metadata.labels).toEqual({ reviewed: "yes" });
    const never = await chainWith([on("/first"), on("/label")], []);
    hook.reviews.length = 0;
    await never.admit(attrs({ annotations: {}, warnings: [] }), csrObject(), undefined);
    expect(hook.reviews.map((r) => r.path)).toEqual(["/first", "/label"]);
  });
});

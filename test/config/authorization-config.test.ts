// AuthorizationConfiguration: versions, an RBAC + Webhook chain with its defaults, and one bad-input case per
// upstream validation rule with the field-named message; a file with any problem loads nothing.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadAuthorizationConfig, type AuthorizationConfigOptions, type LoadedAuthorizationConfig } from "../../src/config/authorization-config.js";
import { PlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir();
const KUBECONFIG = join(dir, "webhook.kubeconfig");
writeFileSync(KUBECONFIG, "apiVersion: v1\nkind: Config\n");

const webhook = (over: Record<string, unknown> = {}) => ({
  timeout: "3s",
  authorizedTTL: "5m",
  unauthorizedTTL: "30s",
  subjectAccessReviewVersion: "v1",
  matchConditionSubjectAccessReviewVersion: "v1",
  failurePolicy: "Deny",
  connectionInfo: { type: "KubeConfigFile", kubeConfigFile: KUBECONFIG },
  ...over,
});
const config = (authorizers: unknown, apiVersion = "apiserver.config.platform.io/v1") => ({ apiVersion, kind: "AuthorizationConfiguration", authorizers });
const withWebhook = (over: Record<string, unknown>) => config([{ type: "Webhook", name: "policy", webhook: webhook(over) }, { type: "RBAC", name: "rbac" }]);

let n = 0;
async function load(doc: unknown, options: AuthorizationConfigOptions = {}): Promise<LoadedAuthorizationConfig> {
  const file = join(dir, `authz-${n++}.yaml`);
  writeFileSync(file, typeof doc === "string" ? doc : stringify(doc));
  return loadAuthorizationConfig(file, options);
}

async function problem(doc: unknown, options: AuthorizationConfigOptions = {}): Promise<string> {
  const err = await load(doc, options).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(PlatformError);
  expect((err as PlatformError).code).toBe("CONFIG_INVALID");
  return (err as PlatformError).message;
}

describe("AuthorizationConfiguration", () => {
  it("reads a webhook then RBAC, with upstream's cache switches on by default", async () => {
    const loaded = await load(config([{ type: "Webhook", name: "policy", webhook: webhook() }, { type: "RBAC", name: "rbac" }]));
    expect(loaded.authorizers).toEqual([
      {
        type: "Webhook",
        name: "policy",
        webhook: { timeoutMs: 3000, authorizedTTLMs: 300_000, unauthorizedTTLMs: 30_000, cacheAuthorizedRequests: true, cacheUnauthorizedRequests: true, subjectAccessReviewVersion: "v1", failurePolicy: "Deny", kubeConfigFile: KUBECONFIG, matchConditions: [] },
      },
      { type: "RBAC", name: "rbac" },
    ]);
  });

  it("reads upstream's AlwaysAllow and AlwaysDeny beside RBAC and webhooks", async () => {
    const loaded = await load(config([{ type: "AlwaysDeny", name: "deny" }, { type: "RBAC", name: "rbac" }, { type: "AlwaysAllow", name: "allow" }]));
    expect(loaded.authorizers).toEqual([{ type: "AlwaysDeny", name: "deny" }, { type: "RBAC", name: "rbac" }, { type: "AlwaysAllow", name: "allow" }]);
  });

  it("accepts v1beta1 and v1alpha1 under apiserver.<suffix>, another group suffix, two webhooks, and switched-off caches", async () => {
    for (const v of ["apiserver.platform.io/v1beta1", "apiserver.platform.io/v1alpha1"]) expect((await load(config([{ type: "RBAC", name: "rbac" }], v))).authorizers).toHaveLength(1);
    expect((await load(config([{ type: "RBAC", name: "rbac" }], "apiserver.config.k8s.io/v1"), { groupSuffix: "k8s.io" })).authorizers).toHaveLength(1);
    const two = await load(config([{ type: "Webhook", name: "a", webhook: webhook({ cacheAuthorizedRequests: false }) }, { type: "Webhook", name: "b", webhook: webhook({ cacheUnauthorizedRequests: false, subjectAccessReviewVersion: "v1beta1", failurePolicy: "NoOpinion" }) }]));
    expect(two.authorizers.map((a) => a.type === "Webhook" && [a.webhook.cacheAuthorizedRequests, a.webhook.cacheUnauthorizedRequests, a.webhook.subjectAccessReviewVersion, a.webhook.failurePolicy])).toEqual([
      [false, true, "v1", "Deny"],
      [true, false, "v1beta1", "NoOpinion"],
    ]);
  });

  it("compiles match conditions with CEL over the SubjectAccessReview spec by default, or with the given compiler", async () => {
    const doc = withWebhook({ matchConditions: [{ expression: "request.user != 'admin'" }, { expression: "has(request.resourceAttributes) && request.resourceAttributes.resource == 'certificatesigningrequests'" }] });
    const w = (await load(doc)).authorizers[0]!;
    const csr = { resourceAttributes: { verb: "approve", resource: "certificatesigningrequests" } };
    const results = w.type === "Webhook" && w.webhook.matchConditions.map((m) => [m.expression.slice(0, 12), m.matches({ user: "admin", ...csr }), m.matches({ user: "bob", ...csr }), m.matches({ user: "bob", nonResourceAttributes: { path: "/x", verb: "get" } })]);
    expect(results).toEqual([["request.user", false, true, true], ["has(request.", true, true, false]]);
    const custom = await load(doc, { compileMatchCondition: (e) => () => e.startsWith("has") });
    expect(custom.authorizers[0]!.type === "Webhook" && custom.authorizers[0]!.webhook.matchConditions.map((m) => m.matches({}))).toEqual([false, true]);
    expect(await problem(doc, { compileMatchCondition: () => { throw new Error("undeclared reference to 'request'"); } })).toContain("a CEL expression that compiles (undeclared reference to 'request')");
  });

  it("evaluates a failing condition to an error (the webhook's failure policy decides)", async () => {
    const w = (await load(withWebhook({ matchConditions: [{ expression: "request.resourceAttributes.namespace == 'kube-system'" }] }))).authorizers[0]!;
    expect(() => w.type === "Webhook" && w.webhook.matchConditions[0]!.matches({ user: "bob", nonResourceAttributes: { path: "/x", verb: "get" } })).toThrow(/evaluation failed: No such key: resourceAttributes/);
  });

  it.each([
    ["a syntax error", "request.user ==", "syntax error"],
    ["an unknown variable", "user == 'a'", "type error"],
    ["an unknown field of the spec", "request.usr == 'a'", "type error: No such key: usr at line 1, column 9"],
    ["a comparison of the wrong types", "request.groups == 'a'", "type error"],
    ["a result that is no boolean", "request.user", "the expression must produce a bool, it produces string"],
  ])("refuses a match condition with %s, naming the field, the expression and the position", async (_what, expression, why) => {
    const message = await problem(withWebhook({ matchConditions: [{ expression: "true" }, { expression }] }));
    expect(message).toContain("expected `authorizers[0].webhook.matchConditions[1].expression` a CEL expression that compiles (");
    expect(message).toContain(why);
    expect(message).toContain(JSON.stringify(expression));
  });

  const many = Array.from({ length: 65 }, (_, i) => ({ expression: `true || ${i} > 0` }));
  it.each([
    ["a wrong apiVersion", config([{ type: "RBAC", name: "rbac" }], "apiserver.config.k8s.io/v1"), 'expected `apiVersion` one of "apiserver.config.platform.io/v1", "apiserver.platform.io/v1beta1", "apiserver.platform.io/v1alpha1", got "apiserver.config.k8s.io/v1"'],
    ["a wrong kind", { ...config([{ type: "RBAC", name: "rbac" }]), kind: "Authorization" }, 'expected `kind` "AuthorizationConfiguration", got "Authorization"'],
    ["an unknown top-level field", { ...config([{ type: "RBAC", name: "rbac" }]), authorizer: [] }, "unknown field `authorizer`"],
    ["no authorizers", config([]), "expected `authorizers` to list at least one authorizer (at least one authorization mode must be defined), got nothing"],
    ["authorizers absent", { apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration" }, "expected `authorizers` to list at least one authorizer"],
    ["a missing type", config([{ name: "x" }]), 'expected `authorizers[0].type` to be one of "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny", got nothing'],
    ["an unknown type", config([{ type: "Node", name: "x" }]), 'expected `authorizers[0].type` one of "RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny", got "Node"'],
    ["AlwaysDeny twice", config([{ type: "AlwaysDeny", name: "a" }, { type: "AlwaysDeny", name: "b" }]), 'expected `authorizers[1].type` to appear once (Duplicate value): only Webhook authorizers may be repeated, got "AlwaysDeny"'],
    ["webhook on AlwaysAllow", config([{ type: "AlwaysAllow", name: "x", webhook: webhook() }]), "expected `authorizers[0].webhook` to be unset: it may only be specified when type=Webhook, got a mapping"],
    ["RBAC twice", config([{ type: "RBAC", name: "a" }, { type: "RBAC", name: "b" }]), 'expected `authorizers[1].type` to appear once (Duplicate value): only Webhook authorizers may be repeated, got "RBAC"'],
    ["a missing name", config([{ type: "RBAC" }]), "expected `authorizers[0].name` to be a DNS label naming the authorizer in metrics and audit, got nothing"],
    ["a name that is not a DNS label", config([{ type: "RBAC", name: "Policy.Webhook" }]), 'expected `authorizers[0].name` to be a valid authorizer name: a lowercase RFC 1123 label must consist of'],
    ["a duplicate name", config([{ type: "RBAC", name: "x" }, { type: "Webhook", name: "x", webhook: webhook() }]), 'expected `authorizers[1].name` to be unique (Duplicate value; also `authorizers[0].name`), got "x"'],
    ["an unknown authorizer field", config([{ type: "RBAC", name: "x", webhok: {} }]), "unknown field `authorizers[0].webhok`"],
    ["a Webhook without webhook", config([{ type: "Webhook", name: "x" }]), "expected `authorizers[0].webhook` to be set (required when type=Webhook), got nothing"],
    ["webhook on RBAC", config([{ type: "RBAC", name: "x", webhook: webhook() }]), "expected `authorizers[0].webhook` to be unset: it may only be specified when type=Webhook, got a mapping"],
    ["an unknown webhook field", withWebhook({ failurePolicy: undefined, failurepolicy: "Deny" }), "unknown field `authorizers[0].webhook.failurepolicy`; did you mean `failurePolicy`?"],
    ["no timeout", withWebhook({ timeout: undefined }), "expected `authorizers[0].webhook.timeout` to be set, got nothing"],
    ["a zero timeout", withWebhook({ timeout: "0s" }), 'expected `authorizers[0].webhook.timeout` to be > 0s and <= 30s, got "0s"'],
    ["a timeout over 30s", withWebhook({ timeout: "31s" }), 'expected `authorizers[0].webhook.timeout` to be > 0s and <= 30s, got "31s"'],
    ["a negative timeout", withWebhook({ timeout: "-1s" }), 'expected `authorizers[0].webhook.timeout` to be > 0s and <= 30s, got "-1s"'],
    ["a timeout that is no duration", withWebhook({ timeout: "soon" }), 'expected `authorizers[0].webhook.timeout` a duration such as'],
    ["no authorizedTTL", withWebhook({ authorizedTTL: undefined }), "expected `authorizers[0].webhook.authorizedTTL` to be set, got nothing"],
    ["a negative authorizedTTL", withWebhook({ authorizedTTL: "-5m" }), 'expected `authorizers[0].webhook.authorizedTTL` to be > 0s, got "-5m"'],
    ["no unauthorizedTTL", withWebhook({ unauthorizedTTL: undefined }), "expected `authorizers[0].webhook.unauthorizedTTL` to be set, got nothing"],
    ["a zero unauthorizedTTL", withWebhook({ unauthorizedTTL: 0 }), "expected `authorizers[0].webhook.unauthorizedTTL` to be > 0s, got 0"],
    ["no subjectAccessReviewVersion", withWebhook({ subjectAccessReviewVersion: undefined }), 'expected `authorizers[0].webhook.subjectAccessReviewVersion` to be one of "v1", "v1beta1", got nothing'],
    ["an unsupported subjectAccessReviewVersion", withWebhook({ subjectAccessReviewVersion: "v2" }), 'expected `authorizers[0].webhook.subjectAccessReviewVersion` one of v1, v1beta1, got "v2"'],
    ["match conditions without their version", withWebhook({ matchConditionSubjectAccessReviewVersion: undefined, matchConditions: [{ expression: "true" }] }), 'expected `authorizers[0].webhook.matchConditionSubjectAccessReviewVersion` to be "v1" (required if match conditions are specified), got nothing'],
    ["an unsupported matchConditionSubjectAccessReviewVersion", withWebhook({ matchConditionSubjectAccessReviewVersion: "v1beta1" }), 'expected `authorizers[0].webhook.matchConditionSubjectAccessReviewVersion` to be "v1", got "v1beta1"'],
    ["no failurePolicy", withWebhook({ failurePolicy: undefined }), 'expected `authorizers[0].webhook.failurePolicy` to be one of "NoOpinion", "Deny", got nothing'],
    ["an unsupported failurePolicy", withWebhook({ failurePolicy: "Fail" }), 'expected `authorizers[0].webhook.failurePolicy` one of NoOpinion, Deny, got "Fail"'],
    ["no connection type", withWebhook({ connectionInfo: { kubeConfigFile: KUBECONFIG } }), 'expected `authorizers[0].webhook.connectionInfo.type` to be one of "InClusterConfig", "KubeConfigFile", got nothing'],
    ["an unknown connection type", withWebhook({ connectionInfo: { type: "KubeConfig", kubeConfigFile: KUBECONFIG } }), 'expected `authorizers[0].webhook.connectionInfo.type` one of "InClusterConfig", "KubeConfigFile", got "KubeConfig"'],
    ["InClusterConfig with a file", withWebhook({ connectionInfo: { type: "InClusterConfig", kubeConfigFile: KUBECONFIG } }), "expected `authorizers[0].webhook.connectionInfo.kubeConfigFile` to be unset: it can only be set when type=KubeConfigFile"],
    ["InClusterConfig, which this server cannot use", withWebhook({ connectionInfo: { type: "InClusterConfig" } }), "InClusterConfig is not offered (the server does not run in a cluster)"],
    ["KubeConfigFile without a file", withWebhook({ connectionInfo: { type: "KubeConfigFile" } }), "expected `authorizers[0].webhook.connectionInfo.kubeConfigFile` to be the absolute path of a client config file (required when type=KubeConfigFile), got nothing"],
    ["a relative kubeConfigFile", withWebhook({ connectionInfo: { type: "KubeConfigFile", kubeConfigFile: "webhook.kubeconfig" } }), 'expected `authorizers[0].webhook.connectionInfo.kubeConfigFile` to be an absolute path, got "webhook.kubeconfig"'],
    ["a missing kubeConfigFile", withWebhook({ connectionInfo: { type: "KubeConfigFile", kubeConfigFile: "/nonexistent/webhook.kubeconfig" } }), "to be a readable file (error loading file: ENOENT)"],
    ["a directory as kubeConfigFile", withWebhook({ connectionInfo: { type: "KubeConfigFile", kubeConfigFile: dir } }), "expected `authorizers[0].webhook.connectionInfo.kubeConfigFile` to be a regular file"],
    ["more than 64 match conditions", withWebhook({ matchConditions: many }), "expected `authorizers[0].webhook.matchConditions` to have at most 64 items (got 65), got a list"],
    ["an empty match condition", withWebhook({ matchConditions: [{ expression: "  " }] }), "expected `authorizers[0].webhook.matchConditions[0].expression` to be a CEL expression"],
    ["a duplicate match condition", withWebhook({ matchConditions: [{ expression: "a" }, { expression: "a" }] }), 'expected `authorizers[0].webhook.matchConditions[1].expression` to be unique (Duplicate value), got "a"'],
    ["a cache switch that is no boolean", withWebhook({ cacheAuthorizedRequests: "yes" }), 'expected `authorizers[0].webhook.cacheAuthorizedRequests` true or false, got "yes"'],
  ])("refuses %s", async (_what, doc, message) => {
    expect(await problem(doc, { compileMatchCondition: () => () => true })).toContain(message);
  });

  it("reports every problem of a file at once and loads none of it", async () => {
    const message = await problem(config([{ type: "RBAC", name: "rbac" }, { type: "Webhook", name: "a", webhook: webhook({ timeout: "1m", failurePolicy: "Fail" }) }]));
    expect(message).toMatch(/^invalid authorization configuration .*: 2 problems: /);
    expect(message).toContain("authorizers[1].webhook.timeout");
    expect(message).toContain("authorizers[1].webhook.failurePolicy");
  });
});

describe("the example of docs/authorization.md", () => {
  const doc = readFileSync(new URL("../../docs/authorization.md", import.meta.url), "utf8");

  it("loads, with its client config file path pointed at a real file", async () => {
    const block = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes("\nkind: AuthorizationConfiguration\n"))!;
    const loaded = await load(block.replace("/etc/platform-ca/policy-webhook.kubeconfig", KUBECONFIG));
    expect(loaded.authorizers.map((a) => `${a.type}:${a.name}`)).toEqual(["Webhook:policy", "RBAC:rbac"]);
    const policy = loaded.authorizers[0]!;
    const asked = (spec: Record<string, unknown>) => policy.type === "Webhook" && policy.webhook.matchConditions.every((m) => m.matches(spec));
    expect(asked({ user: "dave", resourceAttributes: { verb: "approve", resource: "signers", name: "example.com/team" } })).toBe(true);
    expect(asked({ user: "dave", resourceAttributes: { verb: "list", resource: "certificatesigningrequests" } })).toBe(false);
    expect(asked({ user: "dave", nonResourceAttributes: { verb: "get", path: "/healthz" } })).toBe(false);
  });

  it("shows the message a bad file really gets", async () => {
    const shown = /^error: invalid authorization configuration \S+: (.*)$/m.exec(doc)![1]!;
    const message = await problem(config([{ type: "RBAC", name: "rbac" }, { type: "Webhook", name: "a", webhook: webhook({ timeout: "1m", failurePolicy: "Fail" }) }]));
    expect(message.replace(/^invalid authorization configuration \S+: /, "")).toBe(shown);
  });

  it("shows the message a match condition that does not compile really gets", async () => {
    const shown = /^error: invalid authorization configuration \S+: (expected `authorizers\[0\]\.webhook\.matchConditions.*)$/m.exec(doc)![1]!;
    const message = await problem(withWebhook({ matchConditions: [{ expression: "request.usr == 'dave'" }] }));
    expect(message.replace(/^invalid authorization configuration \S+: /, "")).toBe(shown);
  });
});

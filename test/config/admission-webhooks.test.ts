// Webhook admission configuration and manifests: what loads, and every refusal with its message (nothing half-loaded).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { enabledAdmissionPlugins, loadAdmissionConfig, parseAdmissionConfig } from "../../src/config/admission-config.js";
import { PlatformError } from "../../src/errors.js";
import { writeWebhookManifest } from "../fixtures/admission-webhook.js";
import { tempDir, writeFiles } from "../fixtures/temp-dir.js";

const CA = Buffer.from("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").toString("base64");
const hook = (o: Record<string, unknown> = {}) => ({ name: "check.hooks.example.com", url: "https://127.0.0.1:9443/check", caBundle: CA, ...o });

/** An AdmissionConfiguration whose ValidatingAdmissionWebhook entry reads `dir` (or the given configuration). */
async function load(dir: string, configuration: Record<string, unknown> = {}) {
  const root = tempDir();
  const entry = { apiVersion: "apiserver.config.platform.io/v1", kind: "WebhookAdmissionConfiguration", kubeConfigFile: "", staticManifestsDir: dir, ...configuration };
  writeFiles(root, { "admission.yaml": stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins: [{ name: "ValidatingAdmissionWebhook", configuration: entry }] }) });
  return loadAdmissionConfig(join(root, "admission.yaml"));
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof PlatformError)) throw new Error(`expected a refusal, got ${String(err)}`);
  return `${err.code}: ${err.message}`;
}

describe("webhook admission configuration", () => {
  it("loads every manifest of the directory with upstream's defaults, and enables the plugin", async () => {
    const dir = tempDir();
    writeWebhookManifest(dir, "a", "Validating", [hook()]);
    writeWebhookManifest(dir, "b", "Validating", [hook({ name: "other.hooks.example.com", failurePolicy: "Ignore", timeoutSeconds: 30 })]);
    const file = await load(dir);
    const webhooks = file.configs.ValidatingAdmissionWebhook!.webhooks;
    expect(webhooks.map((w) => [w.name, w.failurePolicy, w.timeoutSeconds, w.matchPolicy])).toEqual([
      ["check.hooks.example.com", "Fail", 10, "Equivalent"],
      ["other.hooks.example.com", "Ignore", 30, "Equivalent"],
    ]);
    expect(webhooks[0]!.caBundle).toContain("BEGIN CERTIFICATE");
    expect(enabledAdmissionPlugins({ file })).toContain("ValidatingAdmissionWebhook");
    expect(enabledAdmissionPlugins({})).not.toContain("ValidatingAdmissionWebhook");
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["no sideEffects", { sideEffects: undefined }, "expected `webhooks[0].sideEffects` to be None or NoneOnDryRun, got nothing"],
    ["sideEffects Unknown", { sideEffects: "Unknown" }, 'expected `webhooks[0].sideEffects` one of None, NoneOnDryRun, got "Unknown"'],
    ["bad failurePolicy", { failurePolicy: "Deny" }, 'expected `webhooks[0].failurePolicy` one of Fail, Ignore, got "Deny"'],
    ["timeout 31", { timeoutSeconds: 31 }, "expected `webhooks[0].timeoutSeconds` a whole number from 1 to 30, got 31"],
    ["timeout 0", { timeoutSeconds: 0 }, "expected `webhooks[0].timeoutSeconds` a whole number from 1 to 30, got 0"],
    ["no admissionReviewVersions", { admissionReviewVersions: undefined }, 'expected `webhooks[0].admissionReviewVersions` to list "v1"'],
    ["v1beta1 only", { admissionReviewVersions: ["v1beta1"] }, 'expected `webhooks[0].admissionReviewVersions` to include "v1"'],
    ["two-segment name", { name: "hooks.example" }, 'expected `webhooks[0].name` a domain name with at least three segments separated by dots, got "hooks.example"'],
    ["65 matchConditions", { matchConditions: Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, expression: "true" })) }, "expected `webhooks[0].matchConditions` to have at most 64 items (got 65)"],
    ["a matchCondition without a name", { matchConditions: [{ expression: "true" }] }, "expected `webhooks[0].matchConditions[0].name` to be a qualified name such as exclude-leases, got nothing"],
    ["a matchCondition name that is no qualified name", { matchConditions: [{ name: "not valid!", expression: "true" }] }, 'expected `webhooks[0].matchConditions[0].name` a qualified name'],
    ["duplicate matchCondition names", { matchConditions: [{ name: "a", expression: "true" }, { name: "a", expression: "false" }] }, 'expected `webhooks[0].matchConditions[1].name` to be unique (Duplicate value), got "a"'],
    ["a matchCondition without an expression", { matchConditions: [{ name: "a" }] }, "expected `webhooks[0].matchConditions[0].expression` to be a CEL expression, got nothing"],
    ["a matchCondition syntax error", { matchConditions: [{ name: "a", expression: "object.metadata.name ==" }] }, 'expected `webhooks[0].matchConditions[0].expression` a CEL expression that compiles (syntax error'],
    ["a matchCondition on an unknown request field", { matchConditions: [{ name: "a", expression: "request.operatoin == 'CREATE'" }] }, 'a CEL expression that compiles (type error: No such key: operatoin at line 1, column 9), got "request.operatoin == \'CREATE\'"'],
    ["a matchCondition that is no boolean", { matchConditions: [{ name: "a", expression: "request.name" }] }, "a CEL expression that compiles (the expression must produce a bool, it produces string)"],
    ["a matchCondition naming authorizer", { matchConditions: [{ name: "a", expression: "true && authorizer.requestResource.check('get').allowed()" }] }, "a CEL expression that compiles (the `authorizer` variable is not offered by this server (use rules, selectors or an authorization webhook instead) at line 1, column 9)"],
    ["http url", { url: "http://127.0.0.1:9443/check" }, "expected `webhooks[0].clientConfig.url` an https:// URL without user info, query or fragment"],
    ["service", { clientConfig: { service: { name: "s", namespace: "n" } } }, "expected `webhooks[0].clientConfig.service` to be unset: this server has no Services to route to; give `url` instead"],
    ["bad caBundle", { caBundle: "bm90IGEgY2VydA==" }, "expected `webhooks[0].clientConfig.caBundle` base64 of PEM CA certificates"],
    ["missing rules fields", { rules: [{ operations: ["CREATE"] }] }, 'expected `webhooks[0].rules[0].apiGroups` to list apiGroups ("*" for all)'],
    ["bad operation", { rules: [{ operations: ["PATCH"], apiGroups: ["*"], apiVersions: ["*"], resources: ["*"] }] }, 'expected `webhooks[0].rules[0].operations[0]` one of *, CREATE, UPDATE, DELETE, CONNECT, got "PATCH"'],
    ["reinvocation on validating", { reinvocationPolicy: "IfNeeded" }, "unknown field `webhooks[0].reinvocationPolicy`"],
  ];
  for (const [what, change, message] of bad) {
    it(`refuses a manifest with ${what}, naming the file`, async () => {
      const dir = tempDir();
      writeWebhookManifest(dir, "ok", "Validating", [hook({ name: "fine.hooks.example.com" })]);
      // `clientConfig` given whole replaces the one made from url and caBundle.
      const file = writeWebhookManifest(dir, "zz", "Validating", [hook(change)]);
      const got = await refusal(load(dir));
      expect(got).toContain(`CONFIG_INVALID: invalid webhook manifest ${file}: `);
      expect(got).toContain(message);
    });
  }

  it("compiles matchConditions with CEL over object, oldObject and request", async () => {
    const dir = tempDir();
    const matchConditions = [{ name: "not-dry-run", expression: "!request.dryRun" }, { name: "example.com/labelled", expression: "object != null && has(object.metadata.labels) && object.metadata.labels.team == 'pki'" }];
    writeWebhookManifest(dir, "a", "Validating", [hook({ matchConditions })]);
    const [condition, labelled] = (await load(dir)).configs.ValidatingAdmissionWebhook!.webhooks[0]!.matchConditions;
    expect([condition!.name, labelled!.name]).toEqual(["not-dry-run", "example.com/labelled"]);
    const request = { operation: "CREATE", dryRun: false };
    expect(condition!.matches({ object: null, oldObject: null, request })).toBe(true);
    expect(condition!.matches({ object: null, oldObject: null, request: { ...request, dryRun: true } })).toBe(false);
    expect(labelled!.matches({ object: { metadata: { labels: { team: "pki" } } }, oldObject: null, request })).toBe(true);
    expect(labelled!.matches({ object: { metadata: {} }, oldObject: null, request })).toBe(false);
    expect(labelled!.matches({ object: null, oldObject: { metadata: {} }, request })).toBe(false);
  });

  it("refuses a manifest name without the .static suffix, a duplicate webhook name, a mutating manifest in a validating directory", async () => {
    let dir = tempDir();
    writeFileSync(join(dir, "x.yaml"), stringify({ apiVersion: "admissionregistration.platform.io/v1", kind: "ValidatingWebhookConfiguration", metadata: { name: "x" }, webhooks: [] }));
    expect(await refusal(load(dir))).toContain('expected `metadata.name` to end in ".static.platform.io" (reserved for webhooks loaded from files), got "x"');
    dir = tempDir();
    writeWebhookManifest(dir, "a", "Validating", [hook()]);
    const second = writeWebhookManifest(dir, "b", "Validating", [hook()]);
    expect(await refusal(load(dir))).toBe(`CONFIG_INVALID: invalid webhook manifest ${second}: webhook name "check.hooks.example.com" is also used in ValidatingWebhookConfiguration "a.static.platform.io" (${join(dir, "a.yaml")})`);
    dir = tempDir();
    writeWebhookManifest(dir, "m", "Mutating", [hook()]);
    expect(await refusal(load(dir))).toContain('expected `kind` "ValidatingWebhookConfiguration", got "MutatingWebhookConfiguration"');
  });

  it("refuses a relative or missing directory and an unreadable kubeConfigFile, naming them", async () => {
    expect(await refusal(load("relative/dir"))).toMatch(/invalid admission configuration .*: expected `plugins\[0\]\.configuration\.staticManifestsDir` an absolute path, got "relative\/dir"/);
    expect(await refusal(load(join(tempDir(), "none")))).toContain("a readable directory (ENOENT)");
    const missing = join(tempDir(), "missing.conf");
    expect(await refusal(load(tempDir(), { kubeConfigFile: missing }))).toMatch(new RegExp(`^CONFIG_INVALID: invalid webhook kubeConfigFile ${missing}: `));
  });
});

describe("the webhook example of docs/admission.md", () => {
  it("loads with its directories put in temporary ones", async () => {
    const text = readFileSync(new URL("../../docs/admission.md", import.meta.url), "utf8");
    const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const admission = blocks.find((b) => b.includes("kind: WebhookAdmissionConfiguration"))!;
    const manifest = blocks.find((b) => b.includes("kind: ValidatingWebhookConfiguration"))!;
    const root = tempDir();
    for (const d of ["mutating", "validating"]) mkdirSync(join(root, d));
    writeFileSync(join(root, "validating", "signers.yaml"), manifest);
    const loaded = await parseAdmissionConfig(admission.replaceAll("/etc/platform-ca/", `${root}/`), "docs");
    expect(loaded.configs.MutatingAdmissionWebhook?.webhooks).toEqual([]);
    expect(loaded.configs.ValidatingAdmissionWebhook?.webhooks.map((w) => [w.name, w.url, w.timeoutSeconds, w.rules[0]?.operations])).toEqual([["signer-policy.example.com", "https://policy.example.com:8443/validate-csr", 5, ["CREATE"]]]);
    const [notSecurity, notDryRun] = loaded.configs.ValidatingAdmissionWebhook!.webhooks[0]!.matchConditions;
    const request = (groups: string[], dryRun = false) => ({ object: {}, oldObject: null, request: { operation: "CREATE", dryRun, userInfo: { username: "u", groups } } });
    expect([notSecurity!.name, notDryRun!.name]).toEqual(["not-security-team", "not-dry-run"]);
    expect(notSecurity!.matches(request(["devs"]))).toBe(true);
    expect(notSecurity!.matches(request(["devs", "security"]))).toBe(false);
    expect(notDryRun!.matches(request(["devs"], true))).toBe(false);
  });
});

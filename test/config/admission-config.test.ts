// AdmissionConfiguration and the EventRateLimit Configuration: versions, paths beside the file, inline over path,
// field-named problems (upstream's validation rules), and which plugins run for given flags.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { enabledAdmissionPlugins, loadAdmissionConfig, parseAdmissionConfig, type LoadedAdmissionConfig } from "../../src/config/admission-config.js";
import { PlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

const ERL = "eventratelimit.admission.platform.io/v1alpha1";
const limits = (...l: object[]) => ({ apiVersion: ERL, kind: "Configuration", limits: l });
const admission = (plugins: object[], apiVersion = "apiserver.config.platform.io/v1") => ({ apiVersion, kind: "AdmissionConfiguration", plugins });

/** Writes the documents (name → object) into a fresh directory and loads `admission.yaml` from it. */
async function load(files: Record<string, object | string>, options: { groupSuffix?: string } = {}): Promise<LoadedAdmissionConfig> {
  const dir = tempDir();
  for (const [name, doc] of Object.entries(files)) writeFileSync(join(dir, name), typeof doc === "string" ? doc : stringify(doc));
  return loadAdmissionConfig(join(dir, "admission.yaml"), options);
}

async function problem(files: Record<string, object | string>, options: { groupSuffix?: string } = {}): Promise<PlatformError> {
  const err = await load(files, options).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(PlatformError);
  return err as PlatformError;
}

describe("AdmissionConfiguration", () => {
  it("reads an EventRateLimit configuration from a path beside the file, with upstream's cacheSize default", async () => {
    const loaded = await load({ "admission.yaml": admission([{ name: "EventRateLimit", path: "erl.yaml" }, { name: "CertificateApproval" }]), "erl.yaml": limits({ type: "Namespace", qps: 5, burst: 20 }, { type: "Server", qps: 50, burst: 100, cacheSize: -1 }) });
    expect(loaded.listed).toEqual(["EventRateLimit", "CertificateApproval"]);
    expect(loaded.configs.EventRateLimit?.limits).toEqual([
      { type: "Namespace", qps: 5, burst: 20, cacheSize: 4096 },
      // A negative size is not refused on a Server limit (upstream ignores it there).
      { type: "Server", qps: 50, burst: 100, cacheSize: 4096 },
    ]);
  });

  it("prefers an inline configuration over a path, and accepts v1alpha1 and another group suffix", async () => {
    const inline = limits({ type: "User", qps: 1, burst: 2, cacheSize: 10 });
    const loaded = await load({ "admission.yaml": admission([{ name: "EventRateLimit", path: "missing.yaml", configuration: inline }], "apiserver.platform.io/v1alpha1") });
    expect(loaded.configs.EventRateLimit?.limits).toEqual([{ type: "User", qps: 1, burst: 2, cacheSize: 10 }]);
    const k8s = await load({ "admission.yaml": { ...admission([{ name: "EventRateLimit", configuration: { ...inline, apiVersion: "eventratelimit.admission.k8s.io/v1alpha1" } }]), apiVersion: "apiserver.config.k8s.io/v1" } }, { groupSuffix: "k8s.io" });
    expect(k8s.configs.EventRateLimit?.limits).toHaveLength(1);
  });

  it.each([
    ["a wrong apiVersion", { "admission.yaml": admission([], "apiserver.config.k8s.io/v1") }, 'expected `apiVersion` one of "apiserver.config.platform.io/v1", "apiserver.platform.io/v1alpha1", got "apiserver.config.k8s.io/v1"'],
    ["v1beta1, which has no AdmissionConfiguration", { "admission.yaml": admission([], "apiserver.platform.io/v1beta1") }, "expected `apiVersion` one of"],
    ["a wrong kind", { "admission.yaml": { ...admission([]), kind: "Admission" } }, 'expected `kind` "AdmissionConfiguration", got "Admission"'],
    ["an unknown top-level field", { "admission.yaml": { ...admission([]), plugin: [] } }, "unknown field `plugin`; known fields: apiVersion, kind, plugins"],
    ["an unknown plugin field", { "admission.yaml": admission([{ name: "EventRateLimit", configuraton: {} }]) }, "unknown field `plugins[0].configuraton`; known fields: name, path, configuration"],
    ["an unknown plugin name", { "admission.yaml": admission([{ name: "EventRatelimit" }]) }, 'expected `plugins[0].name` a known admission plugin (CertificateSigningRequestRequester, MutatingAdmissionWebhook, EventRateLimit, '],
    ["a plugin without a name", { "admission.yaml": admission([{ path: "x.yaml" }]) }, "expected `plugins[0].name` to name an admission plugin, got nothing"],
    ["a plugin listed twice", { "admission.yaml": admission([{ name: "CertificateSigning" }, { name: "CertificateSigning" }]) }, 'expected `plugins[1].name` to be listed once (also `plugins[0].name`), got "CertificateSigning"'],
    ["a configuration for a plugin that takes none", { "admission.yaml": admission([{ name: "CertificateApproval", configuration: { a: 1 } }]) }, "expected `plugins[0].configuration` to be unset: CertificateApproval takes no configuration, got a mapping"],
    ["an unreadable path", { "admission.yaml": admission([{ name: "EventRateLimit", path: "missing.yaml" }]) }, 'expected `plugins[0].path` a readable file (relative to the directory of '],
    ["an empty limits list", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits() }]) }, "expected `plugins[0].configuration.limits` not to be empty (at least one limit: Server, Namespace, User or SourceAndObject), got nothing"],
    ["a wrong EventRateLimit apiVersion", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: { ...limits({ type: "Server", qps: 1, burst: 1 }), apiVersion: "eventratelimit.admission.k8s.io/v1alpha1" } }]) }, 'expected `plugins[0].configuration.apiVersion` "eventratelimit.admission.platform.io/v1alpha1", got "eventratelimit.admission.k8s.io/v1alpha1"'],
    ["a lower-case limit type", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "namespace", qps: 1, burst: 1 }) }]) }, 'expected `plugins[0].configuration.limits[0].type` one of Server, Namespace, User, SourceAndObject, got "namespace"'],
    ["qps 0", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "Server", qps: 0, burst: 1 }) }]) }, "expected `plugins[0].configuration.limits[0].qps` to be positive, got 0"],
    ["a negative burst", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "Server", qps: 1, burst: -5 }) }]) }, "expected `plugins[0].configuration.limits[0].burst` to be positive, got -5"],
    ["a missing burst", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "Server", qps: 1 }) }]) }, "expected `plugins[0].configuration.limits[0].burst` to be a positive whole number, got nothing"],
    ["a negative cacheSize", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "User", qps: 1, burst: 1, cacheSize: -1 }) }]) }, "expected `plugins[0].configuration.limits[0].cacheSize` not to be negative, got -1"],
    ["qps beyond int32", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "Server", qps: 2 ** 31, burst: 1 }) }]) }, "expected `plugins[0].configuration.limits[0].qps` a whole number of at most 2147483647, got 2147483648"],
    ["an unknown limit field", { "admission.yaml": admission([{ name: "EventRateLimit", configuration: limits({ type: "Server", qps: 1, burst: 1, cachesize: 3 }) }]) }, "unknown field `plugins[0].configuration.limits[0].cachesize`; did you mean `cacheSize`?"],
  ])("refuses %s, naming the field", async (_what, files, message) => {
    const err = await problem(files);
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toMatch(/^invalid admission configuration \S+admission\.yaml: /);
    expect(err.message).toContain(message);
  });

  it("reports a problem in a configuration file against that file", async () => {
    const err = await problem({ "admission.yaml": admission([{ name: "EventRateLimit", path: "erl.yaml" }]), "erl.yaml": limits({ type: "Server", qps: 1, burst: 0 }) });
    expect(err.message).toMatch(/^invalid EventRateLimit configuration \S+erl\.yaml: expected `limits\[0\]\.burst` to be positive, got 0$/);
  });

  it("reports every problem of the file at once", async () => {
    const err = await problem({ "admission.yaml": admission([{ name: "Nope" }, { name: "EventRateLimit", configuration: limits({ type: "Server", qps: 0, burst: 0 }) }]) });
    expect(err.message).toContain("3 problems: ");
    expect(err.causes.map((c) => c.field)).toEqual(["plugins[0].name", "plugins[1].configuration.limits[0].qps", "plugins[1].configuration.limits[0].burst"]);
  });

  it("names an unreadable admission file with IO_ERROR", async () => {
    const err = (await loadAdmissionConfig(join(tempDir(), "none.yaml")).then(() => undefined, (e: unknown) => e)) as PlatformError;
    expect(err).toMatchObject({ code: "IO_ERROR" });
    expect(err.message).toMatch(/^cannot read admission configuration \S+none\.yaml: ENOENT$/);
  });

  it("parses the text it is given, naming the source", async () => {
    await expect(parseAdmissionConfig("apiVersion: [", "inline.yaml")).rejects.toThrow(/^invalid admission configuration inline\.yaml: line 1: /);
  });
});

describe("which admission plugins run", () => {
  const erl = { source: "a.yaml", configs: { EventRateLimit: { limits: [{ type: "Server" as const, qps: 1, burst: 1, cacheSize: 4096 }] } }, listed: ["EventRateLimit" as const] };
  const defaults = ["CertificateSigningRequestRequester", "CertificateSubjectRestriction", "CertificateApproval", "CertificateRevocation", "CertificateSigning", "ClusterTrustBundleAttest", "RBACEscalationPrevention"];

  it("runs those on by default; EventRateLimit once the file configures it; a disabled one not", () => {
    expect(enabledAdmissionPlugins({})).toEqual(defaults);
    expect(enabledAdmissionPlugins({ file: erl })).toEqual([defaults[0], "EventRateLimit", ...defaults.slice(1)]);
    expect(enabledAdmissionPlugins({ file: erl, disable: ["EventRateLimit", "CertificateApproval"] })).toEqual(defaults.filter((d) => d !== "CertificateApproval"));
  });

  it.each([
    [{ enable: ["EventRateLimit"] }, "EventRateLimit needs a configuration: give it an entry with `path` or `configuration` in --admission-control-config-file"],
    [{ enable: ["NamespaceLifecycle"] }, 'expected `--enable-admission-plugins` to list known admission plugins (CertificateSigningRequestRequester, '],
    [{ disable: ["certificateapproval"] }, 'expected `--disable-admission-plugins` to list known admission plugins'],
    [{ enable: ["CertificateSigning"], disable: ["CertificateSigning"] }, "CertificateSigning in both --enable-admission-plugins and --disable-admission-plugins"],
    [{ disable: ["RBACEscalationPrevention"] }, "expected `--disable-admission-plugins` not to name RBACEscalationPrevention, which always runs: "],
  ])("refuses %j", (selection, message) => {
    expect(() => enabledAdmissionPlugins(selection)).toThrow(message);
  });
});

describe("the examples of docs/admission.md and docs/configuration.md", () => {
  const blocks = (doc: string, kind: string) => [...readFileSync(new URL(`../../docs/${doc}`, import.meta.url), "utf8").matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((b) => b.includes(`\nkind: ${kind}\n`));

  it("loads the two-file example and the inline ones", async () => {
    const [withPath, inline] = blocks("admission.md", "AdmissionConfiguration");
    const [erl] = blocks("admission.md", "Configuration");
    const loaded = await load({ "admission.yaml": withPath!, "event-rate-limit.yaml": erl! });
    expect(loaded.configs.EventRateLimit?.limits.map((l) => [l.type, l.qps, l.burst, l.cacheSize])).toEqual([["Server", 50, 200, 4096], ["Namespace", 10, 50, 1000], ["SourceAndObject", 1, 10, 4096]]);
    expect((await parseAdmissionConfig(inline!, "docs")).configs.EventRateLimit?.limits).toHaveLength(1);
    const [reference] = blocks("configuration.md", "AdmissionConfiguration");
    expect((await parseAdmissionConfig(reference!, "docs")).configs.EventRateLimit?.limits[0]?.type).toBe("Namespace");
  });
});

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { groupNames } from "../../src/api/group.js";
import {
  isControllerEnabled,
  loadControllerManagerConfig,
  parseControllerManagerConfig,
  type ControllerManagerLoadOptions,
} from "../../src/config/controller-manager.js";
import { isPlatformError, type PlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

type Raw = Record<string, unknown>;
const API_VERSION = "platformcontrollermanager.config.platform.io/v1alpha1";
const KIND = "PlatformControllerManagerConfiguration";
const H = 3_600_000;

/** A configuration document: the header plus `blocks`, as YAML. */
function doc(blocks: Raw = {}, header: Raw = { apiVersion: API_VERSION, kind: KIND }): string {
  return stringify({ ...header, ...blocks });
}

const parse = (text: string, options: ControllerManagerLoadOptions = {}) => parseControllerManagerConfig(text, "/etc/platform/cm.yaml", { baseDir: "/etc/platform", ...options });

function refused(text: string, options: ControllerManagerLoadOptions = {}): PlatformError {
  try {
    parse(text, options);
  } catch (err) {
    if (isPlatformError(err, "CONFIG_INVALID")) return err;
    throw err;
  }
  throw new Error("configuration was accepted");
}

const leaderElection = (fields: Raw): string => doc({ Generic: { LeaderElection: fields } });
const signers = groupNames().signers;

describe("parseControllerManagerConfig: defaults and documents", () => {
  it("fills every default from a document with only apiVersion and kind", () => {
    const { config, warnings, ignored, signingFiles } = parse(doc());
    expect(config.Generic).toMatchObject({
      Port: 10257,
      Address: "0.0.0.0",
      MinResyncPeriod: 12 * H,
      ControllerStartInterval: 0,
      Controllers: ["*"],
      LeaderMigrationEnabled: false,
      ClientConnection: { qps: 20, burst: 30, contentType: "application/json" },
      LeaderElection: { leaderElect: true, leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2000, resourceLock: "leases", resourceName: "platform-controller-manager", resourceNamespace: "platform-system" },
    });
    expect(config.CSRSigningController.ClusterSigningDuration).toBe(8760 * H);
    expect(config.ValidatingAdmissionPolicyStatusController.ConcurrentPolicySyncs).toBe(5);
    expect(config.AttachDetachController.ReconcilerSyncLoopPeriod).toBe(60_000);
    expect(config.PlatformCAExtensions).toMatchObject({ ConcurrentCSRSyncs: 64, Approver: { ServingPolicy: "Manual", AuthorizationCacheTTL: 10_000 }, Cleaner: { PendingExpiration: 24 * H } });
    expect([warnings, ignored, signingFiles.size]).toEqual([[], [], 0]);
  });

  it("says whether the file itself sets Generic.Address (the default binds every address)", () => {
    expect(parse(doc()).addressSet).toBe(false);
    expect(parse(doc({ Generic: { Port: 10300 } })).addressSet).toBe(false);
    expect(parse(doc({ Generic: { Address: "0.0.0.0" } })).addressSet).toBe(true);
  });

  it("accepts the example of docs/configuration.md as written", () => {
    const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: platformcontrollermanager[\s\S]*?)```/.exec(text)![1]!;
    const { config, warnings, signingFiles } = parse(example, { strict: true });
    expect(warnings).toEqual([]);
    expect(config.Generic.Controllers).toEqual(["*", "-csrcleaner"]);
    expect(isControllerEnabled("csrcleaner", config.Generic.Controllers)).toBe(false);
    expect(signingFiles.get(signers.nodeagentServing)).toEqual({ certFile: "/etc/platform/pki/serving-ca.crt", keyFile: "/etc/platform/pki/serving-ca.key" });
    expect(config.CSRSigningController.ClusterSigningDuration).toBe(720 * H);
  });

  it("reads JSON as well as YAML", () => {
    const { config } = parse(JSON.stringify({ apiVersion: API_VERSION, kind: KIND, Generic: { Port: 8443, MinResyncPeriod: "1h30m" } }));
    expect([config.Generic.Port, config.Generic.MinResyncPeriod]).toEqual([8443, 1.5 * H]);
  });

  it("reads durations in the one syntax that flags and signer policies use: days and whole seconds too", () => {
    const { config } = parse(doc({ Generic: { MinResyncPeriod: 3600 }, CSRSigningController: { ClusterSigningDuration: "90d" }, PlatformCAExtensions: { Cleaner: { Period: "600" } } }));
    expect([config.Generic.MinResyncPeriod, config.CSRSigningController.ClusterSigningDuration, config.PlatformCAExtensions.Cleaner.Period]).toEqual([H, 90 * 24 * H, 10 * 60 * 1000]);
  });

  it("speaks another group suffix and then refuses the default one", () => {
    const header = { apiVersion: "platformcontrollermanager.config.k8s.io/v1alpha1", kind: KIND };
    expect(parse(doc({}, header), { groupSuffix: "k8s.io" }).config.Generic.Port).toBe(10257);
    expect(refused(doc(), { groupSuffix: "k8s.io" }).message).toContain('expected `apiVersion` "platformcontrollermanager.config.k8s.io/v1alpha1"');
  });

  it.each([
    ["a wrong kind", doc({}, { apiVersion: API_VERSION, kind: "KubeletConfiguration" }), "expected `kind`"],
    ["no header", "Generic: {}\n", "expected `apiVersion`"],
    ["a list at the top", "- a\n- b\n", "expected `(top level)` a mapping"],
    ["broken YAML", "Generic: [\n", "line"],
    ["a duplicate key", `apiVersion: ${API_VERSION}\nkind: ${KIND}\nGeneric: {}\nGeneric: {}\n`, "line 4"],
    ["an alias without its anchor", `apiVersion: ${API_VERSION}\nkind: ${KIND}\nGeneric: *g\n`, "Unresolved alias"],
    ["an alias inside its own anchor", `&d {apiVersion: ${API_VERSION}, kind: ${KIND}, Generic: *d}`, "cycle"],
  ])("refuses a document with %s", (_name, text, fragment) => {
    const err = refused(text);
    expect(err.message).toContain("/etc/platform/cm.yaml");
    expect(err.message).toContain(fragment);
  });

  it("lists the blocks it accepts but does not act on", () => {
    const { ignored, config } = parse(doc({ HPAController: { HorizontalPodAutoscalerTolerance: 0.2 }, PlatformCloudShared: { ClusterName: "prod" }, Generic: {} }));
    expect(ignored).toEqual(["PlatformCloudShared", "HPAController"]);
    expect(config.HPAController.HorizontalPodAutoscalerTolerance).toBe(0.2);
  });
});

describe("parseControllerManagerConfig: fields", () => {
  it("reports unknown fields with their path as warnings, hinting at a case mismatch", () => {
    const { warnings } = parse(doc({ Generic: { port: 1, LeaderElection: { leaseDurationz: "1s" } }, Extra: true }));
    expect(warnings).toEqual([
      "unknown field `Generic.port`; did you mean `Port`?",
      "unknown field `Generic.LeaderElection.leaseDurationz`; known fields: leaderElect, leaseDuration, renewDeadline, retryPeriod, resourceLock, resourceName, resourceNamespace",
      expect.stringMatching(/^unknown field `Extra`; known fields: Generic, CSRSigningController, PlatformCAExtensions, .*, apiVersion, kind$/),
    ]);
  });

  it("turns unknown fields into errors when strict", () => {
    const err = refused(doc({ Generic: { Bogus: 1 } }), { strict: true });
    expect(err.message).toContain("unknown field `Generic.Bogus`");
    expect(err.causes).toEqual([expect.objectContaining({ field: "Generic.Bogus" })]);
  });

  it.each([
    ["a port that is not a number", { Generic: { Port: "http" } }, "expected `Generic.Port` a whole number from 0 to 65535"],
    ["a port above 65535", { Generic: { Port: 70_000 } }, "Generic.Port"],
    ["a fractional port", { Generic: { Port: 80.5 } }, "Generic.Port"],
    ["a burst beyond int32", { Generic: { ClientConnection: { burst: 2 ** 31 } } }, "Generic.ClientConnection.burst"],
    ["a qps that is a string", { Generic: { ClientConnection: { qps: "fast" } } }, "expected `Generic.ClientConnection.qps` a float32"],
    ["a duration in words", { Generic: { MinResyncPeriod: "12 hours" } }, "Generic.MinResyncPeriod"],
    ["a negative duration", { Generic: { ControllerStartInterval: "-1s" } }, "expected `Generic.ControllerStartInterval` a duration of at least 0s, got \"-1s\""],
    ["a yes for a boolean", { Generic: { LeaderElection: { leaderElect: "yes" } } }, "expected `Generic.LeaderElection.leaderElect` true or false"],
    ["a controller list given as a string", { Generic: { Controllers: "csrsigning" } }, "expected `Generic.Controllers` a list"],
    ["a float32 overflow", { NodeLifecycleController: { NodeEvictionRate: 1e39 } }, "NodeLifecycleController.NodeEvictionRate"],
    ["a negative concurrency", { ValidatingAdmissionPolicyStatusController: { ConcurrentPolicySyncs: -1 } }, "ValidatingAdmissionPolicyStatusController.ConcurrentPolicySyncs"],
    ["a group that is a number", { GarbageCollectorController: { GCIgnoredResources: [{ Group: 5 }] } }, "expected `GarbageCollectorController.GCIgnoredResources[0].Group` a string"],
    ["a block that is a list", { HPAController: [] }, "expected `HPAController` a mapping"],
    ["a negative authorization cache TTL", { PlatformCAExtensions: { Approver: { AuthorizationCacheTTL: "-1s" } } }, "expected `PlatformCAExtensions.Approver.AuthorizationCacheTTL` a duration of at least 0s"],
    ["an unknown serving policy", { PlatformCAExtensions: { Approver: { ServingPolicy: "Always" } } }, "expected `PlatformCAExtensions.Approver.ServingPolicy` one of Manual, RequesterMatchesSubject, Custom"],
    ["a Custom serving policy that allows nothing", { PlatformCAExtensions: { Approver: { ServingPolicy: "Custom" } } }, "expected `PlatformCAExtensions.Approver.Serving` DNSPatterns or IPCIDRs under ServingPolicy Custom"],
    ["a Custom serving policy with a bad CIDR", { PlatformCAExtensions: { Approver: { ServingPolicy: "Custom", Serving: { IPCIDRs: ["10.0.0.0/99"] } } } }, "expected `PlatformCAExtensions.Approver.Serving.IPCIDRs` to hold CIDRs"],
    ["a Custom serving policy with a bad pattern", { PlatformCAExtensions: { Approver: { ServingPolicy: "Custom", Serving: { DNSPatterns: ["/[/"] } } } }, "expected `PlatformCAExtensions.Approver.Serving.DNSPatterns` to hold valid patterns"],
    ["a Custom lifetime below ten minutes", { PlatformCAExtensions: { Approver: { ServingPolicy: "Custom", Serving: { DNSPatterns: ["{node}.example"], MaxDuration: "5m" } } } }, "expected `PlatformCAExtensions.Approver.Serving.MaxDuration` to be a whole number ≥ 600"],
    ["a Serving block without the Custom policy", { PlatformCAExtensions: { Approver: { Serving: { DNSPatterns: ["**"] } } } }, "expected `PlatformCAExtensions.Approver.Serving` only with ServingPolicy: Custom (ServingPolicy is Manual)"],
    ["a CRL Distribution Point that is not an http(s) URL", { PlatformCAExtensions: { CRLDistributionPointURL: "ldap://ca.example/crl" } }, 'expected `PlatformCAExtensions.CRLDistributionPointURL` an http or https URL of printable ASCII, got "ldap://ca.example/crl"'],
  ])("refuses %s, naming the field", (_name, blocks, fragment) => {
    expect(refused(doc(blocks)).message).toContain(fragment);
  });

  it("names every problem of a document at once", () => {
    const err = refused(doc({ Generic: { Port: -1, Address: 7, MinResyncPeriod: "soon" } }));
    expect(err.message).toMatch(/3 problems: expected `Generic\.Port` .*; expected `Generic\.Address` .*; expected `Generic\.MinResyncPeriod` /);
    expect(err.causes.map((c) => c.field)).toEqual(["Generic.Port", "Generic.Address", "Generic.MinResyncPeriod"]);
  });
});

describe("parseControllerManagerConfig: leader election and controllers", () => {
  it("refuses a renewDeadline above the leaseDuration with the rule in the message", () => {
    expect(refused(leaderElection({ leaseDuration: "15s", renewDeadline: "20s" })).message).toBe(
      "invalid controller manager configuration /etc/platform/cm.yaml: expected `Generic.LeaderElection.renewDeadline` at most leaseDuration (15s), got \"20s\"",
    );
  });

  it.each([
    [{ leaseDuration: "0s" }, "expected `Generic.LeaderElection.leaseDuration` a duration greater than 0"],
    [{ retryPeriod: "9s" }, "expected `Generic.LeaderElection.retryPeriod` less than renewDeadline / 1.2"],
    [{ resourceLock: "endpoints" }, 'expected `Generic.LeaderElection.resourceLock` "leases"'],
    [{ resourceName: "" }, "expected `Generic.LeaderElection.resourceName` to be set"],
  ])("refuses leader election %j", (fields, fragment) => {
    expect(refused(leaderElection(fields)).message).toContain(fragment);
  });

  it("accepts renewDeadline equal to leaseDuration, and any timing when leader election is off", () => {
    expect(parse(leaderElection({ leaseDuration: "10s", renewDeadline: "10s" })).config.Generic.LeaderElection.renewDeadline).toBe(10_000);
    expect(parse(leaderElection({ leaderElect: false, renewDeadline: "1m" })).config.Generic.LeaderElection.leaderElect).toBe(false);
  });

  it("refuses a malformed controller entry and warns about a controller it does not have", () => {
    expect(refused(doc({ Generic: { Controllers: ["*", "--csrsigning"] } })).message).toContain('expected `Generic.Controllers[1]` "*", a controller name or "-name", got "--csrsigning"');
    const { warnings } = parse(doc({ Generic: { Controllers: ["*", "-deployment"] } }));
    expect(warnings).toEqual([expect.stringContaining('Generic.Controllers[1]: unknown controller "deployment"')]);
  });

  it("reads an empty controller list as the default", () => {
    expect(parse(doc({ Generic: { Controllers: [] } })).config.Generic.Controllers).toEqual(["*"]);
  });

  it.each([
    ["csrsigning", ["*"], [], true],
    ["csrsigning", ["*", "-csrsigning"], [], false],
    ["csrsigning", ["-csrsigning", "*"], [], false],
    ["csrsigning", ["csrsigning", "-csrsigning"], [], true],
    ["csrcleaner", ["csrsigning"], [], false],
    ["bootstrap", ["*"], ["bootstrap"], false],
    ["bootstrap", ["*", "bootstrap"], ["bootstrap"], true],
    ["csrsigning", [], [], false],
  ])("decides %s under %j (disabled by default: %j) → %s", (name, list, off, expected) => {
    expect(isControllerEnabled(name, list, off)).toBe(expected);
  });

  it("requires a valid LeaderMigration block when migration is enabled", () => {
    const err = refused(doc({ Generic: { LeaderMigrationEnabled: true, LeaderMigration: { controllerLeaders: [{ name: "csrsigning" }] } } }));
    expect(err.causes.map((c) => c.field)).toEqual(["Generic.LeaderMigration.leaderName", "Generic.LeaderMigration.controllerLeaders[0].component"]);
    const ok = parse(doc({ Generic: { LeaderMigrationEnabled: true, LeaderMigration: { leaderName: "m", controllerLeaders: [{ name: "csrsigning", component: "*" }] } } }));
    expect(ok.config.Generic.LeaderMigration.resourceLock).toBe("leases");
  });
});

describe("parseControllerManagerConfig: CSR signing", () => {
  it("gives the cluster pair to all four built-in signers, resolved against the file's directory", () => {
    const { signingFiles } = parse(doc({ CSRSigningController: { ClusterSigningCertFile: "ca.crt", ClusterSigningKeyFile: "/abs/ca.key" } }));
    expect([...signingFiles.keys()].sort()).toEqual(Object.values(signers).sort());
    expect(signingFiles.get(signers.legacyUnknown)).toEqual({ certFile: "/etc/platform/ca.crt", keyFile: "/abs/ca.key" });
  });

  it("maps the per-signer blocks to the signers they name, under the configured suffix", () => {
    const { signingFiles } = parse(
      doc({ CSRSigningController: { KubeletClientSignerConfiguration: { CertFile: "/c.crt", KeyFile: "/c.key" } } }, { apiVersion: "platformcontrollermanager.config.k8s.io/v1alpha1", kind: KIND }),
      { groupSuffix: "k8s.io" },
    );
    expect([...signingFiles]).toEqual([["kubernetes.io/kube-apiserver-client-kubelet", { certFile: "/c.crt", keyFile: "/c.key" }]]);
  });

  it.each([
    ["the cluster pair together with a per-signer block", { ClusterSigningCertFile: "a", ClusterSigningKeyFile: "b", LegacyUnknownSignerConfiguration: { CertFile: "c", KeyFile: "d" } }, "expected `CSRSigningController` either ClusterSigningCertFile/ClusterSigningKeyFile or per-signer blocks, not both, got \"LegacyUnknownSignerConfiguration\""],
    ["a cluster certificate without its key", { ClusterSigningCertFile: "a" }, "expected `CSRSigningController.ClusterSigningKeyFile` to be set when ClusterSigningCertFile is set"],
    ["a signer key without its certificate", { KubeletServingSignerConfiguration: { KeyFile: "k" } }, "expected `CSRSigningController.KubeletServingSignerConfiguration.CertFile` to be set when KeyFile is set"],
    ["a zero signing duration", { ClusterSigningDuration: "0s" }, "expected `CSRSigningController.ClusterSigningDuration` a duration of at least 1s, got \"0s\""],
  ])("refuses %s", (_name, block, fragment) => {
    expect(refused(doc({ CSRSigningController: block })).message).toContain(fragment);
  });

  it("requires the file of every custom signer and the module of every plug-in", () => {
    const err = refused(doc({ PlatformCAExtensions: { CustomSigners: [{}], SignerPlugins: [{ options: { a: 1 } }] } }));
    expect(err.causes.map((c) => c.field)).toEqual(["PlatformCAExtensions.CustomSigners[0].policyFile", "PlatformCAExtensions.SignerPlugins[0].module"]);
  });

  it("resolves a relative plug-in path but keeps a package name, and keeps plug-in options as written", () => {
    const { config } = parse(doc({ PlatformCAExtensions: { SignerPlugins: [{ module: "./p.js", options: { x: [1] } }, { module: "some-package" }] } }));
    expect(config.PlatformCAExtensions.SignerPlugins).toEqual([
      { module: "/etc/platform/p.js", options: { x: [1] } },
      { module: "some-package", options: undefined },
    ]);
  });
});

describe("loadControllerManagerConfig", () => {
  const dir = tempDir("cm-config-");

  it("reads a file and resolves its paths against the file's directory", async () => {
    const path = join(dir, "cm.yaml");
    writeFileSync(path, doc({ CSRSigningController: { ClusterSigningCertFile: "pki/ca.crt", ClusterSigningKeyFile: "pki/ca.key" }, SAController: { RootCAFile: "pki/root.crt" } }));
    const loaded = await loadControllerManagerConfig(path);
    expect(loaded.source).toBe(path);
    expect(loaded.config.CSRSigningController.ClusterSigningCertFile).toBe(join(dir, "pki/ca.crt"));
    // The root CA publisher acts on SAController (its RootCAFile): not a block listed as ignored.
    expect(loaded.config.SAController.RootCAFile).toBe(join(dir, "pki/root.crt"));
    expect(loaded.ignored).toEqual([]);
  });

  it("answers IO_ERROR for a file that does not exist", async () => {
    await expect(loadControllerManagerConfig(join(dir, "missing.yaml"))).rejects.toMatchObject({ code: "IO_ERROR", message: expect.stringContaining("ENOENT") });
  });
});

describe("the serving approval policy a configuration asks for", () => {
  const approverOf = (approver: unknown) => parse(doc({ PlatformCAExtensions: { Approver: approver } })).config.PlatformCAExtensions.Approver;

  it("is none for Manual, the built-in one for RequesterMatchesSubject, and the Serving block for Custom", async () => {
    const { servingPolicyOf } = await import("../../src/config/controller-manager.js");
    const { REQUESTER_MATCHES_SUBJECT } = await import("../../signers/serving-approval.js");
    expect(servingPolicyOf(approverOf({}))).toBeUndefined();
    expect(servingPolicyOf(approverOf({ ServingPolicy: "RequesterMatchesSubject" }))).toBe(REQUESTER_MATCHES_SUBJECT);
    const custom = { ServingPolicy: "Custom", Serving: { DNSPatterns: ["{node}.nodes.example"], IPCIDRs: ["10.0.0.0/8"], MaxDuration: "720h", UsernameMustMatchCN: false } };
    expect(servingPolicyOf(approverOf(custom))).toEqual({ dnsPatterns: ["{node}.nodes.example"], ipCidrs: ["10.0.0.0/8"], maxExpirationSeconds: 720 * 3600, usernameMustMatchCn: false });
    expect(servingPolicyOf(approverOf({ ServingPolicy: "Custom", Serving: { IPCIDRs: ["10.0.0.1"] } }))).toEqual({ dnsPatterns: [], ipCidrs: ["10.0.0.1"], usernameMustMatchCn: true });
  });
});

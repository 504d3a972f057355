import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { auditApiVersion, loadAuditPolicy, parseAuditPolicy } from "../../src/config/audit-policy.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

type Raw = Record<string, unknown>;

function policy(fields: Raw = {}): string {
  return stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }], ...fields });
}

function problems(text: string, options = {}): string[] {
  try {
    parseAuditPolicy(text, "policy.yaml", options);
  } catch (err) {
    if (isPlatformError(err, "CONFIG_INVALID")) return err.causes.map((c) => c.message);
    throw err;
  }
  throw new Error("policy was accepted");
}

describe("parseAuditPolicy", () => {
  it("reads rules with their defaults", () => {
    const { policy: p } = parseAuditPolicy(policy({ omitStages: ["RequestReceived"], rules: [{ level: "Request", verbs: ["create"], resources: [{ group: "certificates.platform.io", resources: ["certificatesigningrequests/*"] }], omitManagedFields: false }] }), "policy.yaml");
    expect(p).toEqual({
      omitStages: ["RequestReceived"],
      omitManagedFields: false,
      rules: [{ level: "Request", users: [], userGroups: [], verbs: ["create"], resources: [{ group: "certificates.platform.io", resources: ["certificatesigningrequests/*"], resourceNames: [] }], namespaces: [], nonResourceURLs: [], omitStages: [], omitManagedFields: false }],
    });
    expect(p.rules[0]!.omitManagedFields).toBe(false);
    expect(parseAuditPolicy(policy(), "p").policy.rules[0]!.omitManagedFields).toBeUndefined();
  });

  it("checks apiVersion and kind under the configured suffix", () => {
    expect(auditApiVersion("k8s.io")).toBe("audit.k8s.io/v1");
    expect(parseAuditPolicy(policy({ apiVersion: "audit.k8s.io/v1" }), "p", { groupSuffix: "k8s.io" }).policy.rules).toHaveLength(1);
    expect(problems(policy({ apiVersion: "audit.k8s.io/v1" }))).toEqual(['expected `apiVersion` "audit.platform.io/v1", got "audit.k8s.io/v1"']);
    expect(problems(policy({ kind: "PolicyList" }))).toEqual(['expected `kind` "Policy", got "PolicyList"']);
  });

  it("refuses unknown fields, naming them, unless strict is off", () => {
    const text = policy({ rules: [{ level: "Metadata", namespace: ["x"] }] });
    expect(problems(text)).toEqual(["unknown field `rules[0].namespace`; known fields: level, users, userGroups, verbs, resources, namespaces, nonResourceURLs, omitStages, omitManagedFields"]);
    expect(parseAuditPolicy(text, "p", { strict: false }).warnings).toHaveLength(1);
  });

  it("names every invalid value with its field", () => {
    expect(problems(policy({ rules: [{ verbs: ["get"] }] }))).toEqual(["expected `rules[0].level` to be one of None, Metadata, Request, RequestResponse, got nothing"]);
    expect(problems(policy({ rules: [{ level: "Everything" }] }))).toEqual(['expected `rules[0].level` one of None, Metadata, Request, RequestResponse, got "Everything"']);
    expect(problems(policy({ omitStages: ["ResponseEnded"] }))).toEqual(['expected `omitStages[0]` one of RequestReceived, ResponseStarted, ResponseComplete, Panic, got "ResponseEnded"']);
    expect(problems(policy({ rules: [{ level: "None", resources: [{ resourceNames: ["a"] }] }] }))).toEqual(["expected `rules[0].resources[0].resourceNames` to be empty when `resources` is empty, got a list"]);
    expect(problems(policy({ rules: [{ level: "None", resources: [{ resources: ["a/b/c"] }] }] }))[0]).toContain("`rules[0].resources[0].resources[0]`");
    expect(problems(policy({ rules: [{ level: "None", nonResourceURLs: ["/a*b"] }] }))).toEqual(['expected `rules[0].nonResourceURLs[0]` a `*` only at the end, got "/a*b"']);
    expect(problems(policy({ rules: [{ level: "None", nonResourceURLs: ["/x"], namespaces: [""] }] }))[0]).toContain("`rules[0].nonResourceURLs`");
    expect(problems(policy({ rules: undefined }))).toEqual(["expected `rules` to be a list of rules (the first that matches a request gives its level), got nothing"]);
    expect(problems(policy({ omitManagedFields: "yes" }))).toEqual(['expected `omitManagedFields` true or false, got "yes"']);
  });

  it("loads a file and reports an unreadable one", async () => {
    const dir = tempDir();
    const path = join(dir, "policy.yaml");
    writeFileSync(path, policy());
    expect((await loadAuditPolicy(path)).policy.rules[0]!.level).toBe("Metadata");
    await expect(loadAuditPolicy(join(dir, "missing.yaml"))).rejects.toThrow(/cannot read audit policy .*missing\.yaml: ENOENT/);
    writeFileSync(path, "rules: [");
    await expect(loadAuditPolicy(path)).rejects.toThrow(/invalid audit policy .*policy\.yaml: line 1/);
  });

  it("accepts the example of docs/configuration.md, and fails a bad file with the message shown there", () => {
    const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: audit[\s\S]*?)```/.exec(text)![1]!;
    expect(parseAuditPolicy(example, "docs").policy.rules.map((r) => r.level)).toEqual(["None", "RequestResponse", "Metadata"]);
    const shown = /```\nerror: (invalid audit policy .*)\n```/.exec(text)![1]!;
    expect(() => parseAuditPolicy(policy({ rules: [{ level: "All" }, { level: "None", verb: ["get"] }] }), "policy.yaml")).toThrow(shown);
  });
});

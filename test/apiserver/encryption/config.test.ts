// EncryptionConfiguration: wildcards and which rule a resource falls under; every refusal names its field.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { covers, parseEncryptionConfig } from "../../../src/apiserver/encryption/config.js";
import { KEY_A, encryptionYaml } from "./fixtures.js";

const HEADER = "apiVersion: apiserver.config.platform.io/v1\nkind: EncryptionConfiguration\n";

function problem(yaml: string): string {
  try {
    parseEncryptionConfig(yaml, "enc.yaml");
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("expected the configuration to be refused");
}

describe("EncryptionConfiguration", () => {
  it("matches names of the core group, of a group, and the wildcards *., *.group and *.*", () => {
    expect(covers("secrets", "secrets", "")).toBe(true);
    expect(covers("secrets.", "secrets", "")).toBe(true);
    expect(covers("secrets", "secrets", "apps")).toBe(false);
    expect(covers("leases.coordination.platform.io", "leases", "coordination.platform.io")).toBe(true);
    expect(covers("*.", "configmaps", "")).toBe(true);
    expect(covers("*.", "leases", "coordination.platform.io")).toBe(false);
    expect(covers("*.certificates.platform.io", "certificatesigningrequests", "certificates.platform.io")).toBe(true);
    expect(covers("*.*", "anything", "any.group")).toBe(true);
  });

  it("reads the apiVersion of the configured group suffix, and several rules in order", () => {
    const yaml = encryptionYaml(["secrets", "*.rbac.authorization.k8s.io"], [{ aesgcm: { k1: KEY_A } }, "identity"]).replace("platform.io/v1", "k8s.io/v1")
      + `  - resources: ["*.*"]\n    providers:\n      - identity: {}\n`;
    const config = parseEncryptionConfig(yaml, "enc.yaml", { groupSuffix: "k8s.io" });
    expect(config.rules.map((r) => [r.resources, r.transformers.map((t) => t.name)])).toEqual([
      [["secrets", "*.rbac.authorization.k8s.io"], ["aesgcm/k1", "identity"]],
      [["*.*"], ["identity"]],
    ]);
  });

  it.each([
    ["a wrong apiVersion", encryptionYaml(["secrets"], ["identity"]).replace("platform.io/v1", "platform.io/v1beta1"),
      'invalid encryption configuration enc.yaml: expected `apiVersion` "apiserver.config.platform.io/v1", got "apiserver.config.platform.io/v1beta1"'],
    ["an unknown field", encryptionYaml(["secrets"], ["identity"]).replace("  - resources:", "  - resource: [x]\n    resources:"),
      "invalid encryption configuration enc.yaml: unknown field `resources[0].resource`; known fields: resources, providers"],
    ["a short aescbc key", encryptionYaml(["secrets"], [{ aescbc: { k1: Buffer.alloc(16).toString("base64") } }]),
      "invalid encryption configuration enc.yaml: expected `resources[0].providers[0].aescbc.keys[0].secret` a key of 32 bytes for aescbc, got a key of 16 bytes"],
    ["a 20-byte aesgcm key", encryptionYaml(["secrets"], [{ aesgcm: { k1: Buffer.alloc(20).toString("base64") } }]),
      "invalid encryption configuration enc.yaml: expected `resources[0].providers[0].aesgcm.keys[0].secret` a key of 16, 24, 32 bytes for aesgcm, got a key of 20 bytes"],
    ["a secret that is not base64", encryptionYaml(["secrets"], [{ secretbox: { k1: "not base64!" } }]),
      "invalid encryption configuration enc.yaml: expected `resources[0].providers[0].secretbox.keys[0].secret` base64 text, got text that is not base64"],
    ["overlapping resources in one list", encryptionYaml(["secrets", "*."], ["identity"]),
      'invalid encryption configuration enc.yaml: expected `resources[0].resources[1]` not to overlap `resources[0].resources[0]` ("secrets") in the same list: the narrower entry would be masked, got "*."'],
    ["a resource masked by an earlier rule", encryptionYaml(["*."], ["identity"]) + '  - resources: ["secrets"]\n    providers:\n      - identity: {}\n',
      'invalid encryption configuration enc.yaml: expected `resources[1].resources[0]` a resource not already covered by `resources[0].resources[0]` ("*."), which comes first and wins, got "secrets"'],
    ["'*' alone", encryptionYaml(["*"], ["identity"]),
      "invalid encryption configuration enc.yaml: expected `resources[0].resources[0]` '*.' (all resources of the core group) or '*.*' (all resources), not '*', got \"*\""],
    ["two providers in one item", `${HEADER}resources:\n  - resources: [secrets]\n    providers:\n      - identity: {}\n        aescbc: { keys: [] }\n`,
      "invalid encryption configuration enc.yaml: expected `resources[0].providers[0]` exactly one provider (split several into separate list items), got a mapping"],
    ["no providers", `${HEADER}resources:\n  - resources: [secrets]\n`,
      "invalid encryption configuration enc.yaml: expected `resources[0].providers` to hold at least one provider, got nothing"],
    ["a kms provider of apiVersion v1 (the default)", `${HEADER}resources:\n  - resources: [secrets]\n    providers:\n      - kms: { name: k, endpoint: unix:///tmp/k.sock }\n`,
      'invalid encryption configuration enc.yaml: expected `resources[0].providers[0].kms.apiVersion` v2 (KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.), got "v1"'],
  ])("refuses %s", (_what, yaml, message) => {
    expect(problem(yaml)).toBe(message);
  });

  it("accepts the example of docs/configuration.md", () => {
    const text = readFileSync(new URL("../../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: apiserver\.config[\s\S]*?)```/.exec(text)![1]!;
    const config = parseEncryptionConfig(example, "docs");
    expect(config.rules.map((r) => [r.resources, r.transformers.map((t) => t.name)])).toEqual([
      [["secrets", "*.certificates.platform.io"], ["aesgcm/key2", "identity"]],
      [["*.*"], ["identity"]],
    ]);
  });

  it("accepts deploy/encryption-config.yaml: Secrets through KMS v2 first, identity reading what came before", () => {
    const config = parseEncryptionConfig(readFileSync(new URL("../../../deploy/encryption-config.yaml", import.meta.url), "utf8"), "deploy");
    expect(config.rules.map((r) => [r.resources, r.transformers.map((t) => t.name)])).toEqual([[["secrets"], ["kms/platform-kms", "identity"]]]);
    expect(config.kms.map((t) => t.settings)).toEqual([{ name: "platform-kms", endpoint: "unix:///run/platform-ca/kms.sock", timeoutMs: 3000 }]);
    for (const t of config.kms) t.close();
  });

  it("never shows a secret in a message", () => {
    const secret = Buffer.alloc(31, 1).toString("base64");
    expect(problem(encryptionYaml(["secrets"], [{ secretbox: { k1: secret } }]))).not.toContain(secret);
  });
});

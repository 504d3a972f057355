// EncryptionConfiguration documents for tests: fixed keys, one rule per call.
import { parseEncryptionConfig, type EncryptionConfig } from "../../../src/apiserver/encryption/config.js";

export const KEY_A = Buffer.alloc(32, 7).toString("base64");
export const KEY_B = Buffer.alloc(32, 9).toString("base64");

/** `{ aesgcm: { key1: secret } }` (one provider type with its named keys), or "identity". */
export type Provider = Readonly<Record<string, Readonly<Record<string, string>>>> | "identity";

/** The YAML of one rule: `resources` by `providers`, each `{ aesgcm: { name: secret, … } }` or "identity". */
export function encryptionYaml(resources: readonly string[], providers: readonly Provider[]): string {
  const items = providers.map((p) => {
    if (p === "identity") return "      - identity: {}";
    const [type, keys] = Object.entries(p)[0]!;
    const list = Object.entries(keys).map(([name, secret]) => `{ name: ${name}, secret: "${secret}" }`).join(", ");
    return `      - ${type}:\n          keys: [${list}]`;
  });
  return `apiVersion: apiserver.config.platform.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [${resources.map((r) => JSON.stringify(r)).join(", ")}]
    providers:
${items.join("\n")}
`;
}

export function encryptionConfig(resources: readonly string[], providers: readonly Provider[]): EncryptionConfig {
  return parseEncryptionConfig(encryptionYaml(resources, providers), "test.yaml");
}

/** `*.*` encrypted by one provider with KEY_A. */
export const everythingWith = (type: "aesgcm" | "aescbc" | "secretbox"): EncryptionConfig => encryptionConfig(["*.*"], [{ [type]: { key1: KEY_A } }]);

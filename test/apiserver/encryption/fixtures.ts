// EncryptionConfiguration documents for tests: fixed keys, one rule per call.
import { parseEncryptionConfig, type EncryptionConfig, type EncryptionLoadOptions } from "../../../src/apiserver/encryption/config.js";

export const KEY_A = Buffer.alloc(32, 7).toString("base64");
export const KEY_B = Buffer.alloc(32, 9).toString("base64");

/** A `kms` provider block. */
export interface KmsProvider {
  readonly kms: { readonly name: string; readonly endpoint: string; readonly apiVersion?: string; readonly timeout?: string };
}

/** `{ aesgcm: { key1: secret } }` (one provider type with its named keys), a KMS provider, or "identity". */
export type Provider = Readonly<Record<string, Readonly<Record<string, string>>>> | KmsProvider | "identity";

/** The YAML of one rule: `resources` by `providers`, each `{ aesgcm: { name: secret, … } }` or "identity". */
export function encryptionYaml(resources: readonly string[], providers: readonly Provider[]): string {
  const items = providers.map((p) => {
    if (p === "identity") return "      - identity: {}";
    if ("kms" in p && typeof p.kms.name === "string") {
      const { name, endpoint, apiVersion = "v2", timeout } = (p as KmsProvider).kms;
      return `      - kms: { apiVersion: ${apiVersion}, name: ${name}, endpoint: "${endpoint}"${timeout ? `, timeout: ${timeout}` : ""} }`;
    }
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

export function encryptionConfig(resources: readonly string[], providers: readonly Provider[], options: EncryptionLoadOptions = {}): EncryptionConfig {
  return parseEncryptionConfig(encryptionYaml(resources, providers), "test.yaml", options);
}

/** `*.*` encrypted by one provider with KEY_A. */
export const everythingWith = (type: "aesgcm" | "aescbc" | "secretbox"): EncryptionConfig => encryptionConfig(["*.*"], [{ [type]: { key1: KEY_A } }]);

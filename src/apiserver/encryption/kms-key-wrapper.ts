// `--ca-key-kms NAME`: the KMS v2 provider NAME of the encryption configuration wraps the data key of the CA key file
// (src/pki/wrapped-key.ts). One client per call: keys are wrapped and unwrapped at start and when the file changes.
import { randomUUID } from "node:crypto";
import { PlatformError } from "../../errors.js";
import { useKeyWrapper, type KeyWrapper } from "../../pki/wrapped-key.js";
import type { EncryptionConfig } from "./config.js";
import { KmsClient } from "./kms-client.js";
import type { KmsSettings } from "./kms-provider.js";

export function kmsKeyWrapper(settings: KmsSettings): KeyWrapper {
  const once = async <T>(call: (client: KmsClient) => Promise<T>): Promise<T> => {
    const client = new KmsClient(settings.endpoint, settings.timeoutMs);
    try {
      return await call(client);
    } finally {
      client.close();
    }
  };
  return {
    name: settings.name,
    settings: { ...settings },
    wrap: (dek) =>
      once(async (client) => {
        const r = await client.encrypt(randomUUID(), dek);
        if (r.key_id === "") throw new Error("the KMS plugin answered Encrypt without a key ID");
        return { ciphertext: Buffer.from(r.ciphertext), keyId: r.key_id, annotations: r.annotations };
      }),
    unwrap: (w) => once((client) => client.decrypt(randomUUID(), { ciphertext: w.ciphertext, key_id: w.keyId, annotations: w.annotations })),
  };
}

/** The settings of the `kms` provider `name` in `config`; a name the file does not define stops the start. */
export function caKeyKmsSettings(name: string, config: EncryptionConfig | undefined): KmsSettings {
  if (!config) throw new PlatformError("CONFIG_INVALID", `--ca-key-kms ${name} needs --encryption-provider-config with a kms provider named ${name}`);
  const found = config.kms.find((t) => t.settings.name === name);
  if (!found) {
    const names = config.kms.map((t) => t.settings.name);
    throw new PlatformError("CONFIG_INVALID", `--ca-key-kms ${name}: encryption configuration ${config.source} has no kms provider of that name (${names.length > 0 ? `it has ${names.join(", ")}` : "it has none"})`);
  }
  return found.settings;
}

/**
 * Registers the `kms` provider `name` of `config` as this thread's key service, through which every CA key file read
 * afterwards is unwrapped (src/pki/wrapped-key.ts). Every command with `--ca-key-kms` comes here.
 */
export function useCaKeyKms(name: string, config: EncryptionConfig | undefined): KeyWrapper {
  const wrapper = kmsKeyWrapper(caKeyKmsSettings(name, config));
  useKeyWrapper(wrapper);
  return wrapper;
}

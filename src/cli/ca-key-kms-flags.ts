// `--ca-key-kms NAME` (with `--encryption-provider-config FILE`): the KMS v2 provider that unwraps a CA key file
// (src/pki/wrapped-key.ts). Defined once for every command that reads a CA key file: apiserver, up, storage rewrite,
// controller and sign.
import type { Command } from "commander";
import type { EncryptionConfig } from "../apiserver/encryption/config.js";
import type { KeyWrapper } from "../pki/wrapped-key.js";
import { UsageError } from "./program.js";

export interface CaKeyKmsFlags {
  readonly encryptionProviderConfig?: string;
  readonly caKeyKms?: string;
}

/** `--ca-key-kms`, on a command whose `--encryption-provider-config` is its own (the servers encrypt their store with it). */
export function addCaKeyKmsOption(command: Command, description: string): Command {
  return command.option("--ca-key-kms <name>", description);
}

/** Both flags, for a command that reads the encryption configuration only to find the provider (controller, sign). */
export function addCaKeyKmsOptions(command: Command, keyFlag: string): Command {
  return addCaKeyKmsOption(
    command.option("--encryption-provider-config <file>", "EncryptionConfiguration file that defines the kms provider of --ca-key-kms"),
    `the kms provider of --encryption-provider-config that wraps the CA key file (${keyFlag}), e.g. the data directory's pki/ca.key of a server run with --ca-key-kms`,
  );
}

/**
 * Registers the provider of `--ca-key-kms` on this thread before a CA key file is read (a command without the flag
 * registers nothing, and reading a wrapped key then names the flags it needs). Only the provider's settings are kept:
 * the configuration's other providers are not started.
 */
export async function useCaKeyKmsFlags(flags: CaKeyKmsFlags, groupSuffix: string): Promise<KeyWrapper | undefined> {
  if (flags.caKeyKms === undefined) {
    if (flags.encryptionProviderConfig !== undefined) throw new UsageError("--encryption-provider-config is read here only to find the provider of --ca-key-kms: give --ca-key-kms too");
    return undefined;
  }
  const [{ loadEncryptionConfig }, { useCaKeyKms }] = await Promise.all([import("../apiserver/encryption/config.js"), import("../apiserver/encryption/kms-key-wrapper.js")]);
  let config: EncryptionConfig | undefined;
  try {
    config = flags.encryptionProviderConfig === undefined ? undefined : await loadEncryptionConfig(flags.encryptionProviderConfig, { groupSuffix });
    return useCaKeyKms(flags.caKeyKms, config);
  } finally {
    for (const t of config?.kms ?? []) t.close();
  }
}

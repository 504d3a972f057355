// `platform-ca storage rewrite`: writes every stored object again with the first provider of its encryption rule, the
// step of a key rotation between making a new key first and removing the old one (the server must be stopped); with
// --ca-key-kms it also wraps the CA key file with that KMS provider (again, under its current key).
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import { createLogger } from "../../logger.js";
import { addCaKeyKmsOption } from "../ca-key-kms-flags.js";
import { addLogOptions, applyLogFlags, type LogFlags } from "../log-flags.js";
import { UsageError, type CommandModule } from "../program.js";
import { addStorageOptions, storageBackend, throughEgress, type StorageFlags } from "../storage-flags.js";
import { addEgressOption, readEgressSelector, type EgressFlags } from "../tracing-egress-flags.js";

interface RewriteFlags extends LogFlags, StorageFlags, EgressFlags {
  dataDir?: string;
  encryptionProviderConfig?: string;
  groupSuffix: string;
  caKeyKms?: string;
}

async function rewrite(flags: RewriteFlags): Promise<void> {
  if (!flags.dataDir) throw new UsageError("--data-dir is required");
  if (!flags.encryptionProviderConfig) throw new UsageError("--encryption-provider-config is required: the rewrite writes with its first providers");
  const backend = await storageBackend(flags);
  applyLogFlags(flags);
  const logger = createLogger({ name: "storage" });
  const [{ loadEncryption, openDataStore }, { rewriteAll }] = await Promise.all([import("../../apiserver/bootstrap/store.js"), import("../../apiserver/encryption/rewrite.js")]);
  const encryption = await loadEncryption(flags.encryptionProviderConfig, flags.groupSuffix, logger);
  const egress = await readEgressSelector(flags, flags.groupSuffix, logger);
  // Registered: a key already wrapped is unwrapped through it before it is wrapped again.
  const wrapper = flags.caKeyKms === undefined ? undefined : (await import("../../apiserver/encryption/kms-key-wrapper.js")).useCaKeyKms(flags.caKeyKms, encryption);
  // SQLite is opened exclusively: a running server on this data directory makes this fail rather than race it. On
  // etcd every rewrite is an update with a precondition, so servers may keep running (a changed object is skipped).
  const storage = await openDataStore(flags.dataDir, encryption, logger, { backend: throughEgress(backend, egress) });
  try {
    const result = await rewriteAll(storage);
    process.stdout.write(`rewrote ${result.rewritten} objects${result.skipped ? ` (${result.skipped} changed meanwhile, left as written)` : ""}\n`);
    if (wrapper) {
      const { wrapCaKey } = await import("../../apiserver/bootstrap/ca-key-wrap.js");
      const { path, outcome } = await wrapCaKey(flags.dataDir, wrapper);
      process.stdout.write(outcome === "missing" ? `no CA key at ${path}\n` : `${outcome} ${path} with the KMS provider ${wrapper.name}\n`);
    }
  } finally {
    await storage.close();
  }
}

export const storageCommand: CommandModule = (program: Command) => {
  const example =
    "\nExamples:\n  platform-ca storage rewrite --data-dir /var/lib/platform-ca --encryption-provider-config encryption.yaml\n  platform-ca storage rewrite --data-dir /var/lib/platform-ca --encryption-provider-config encryption.yaml --ca-key-kms kms1\n";
  const storage = program.command("storage").description("maintenance of a stopped server's store").addHelpText("after", example);
  const command = addStorageOptions(addEgressOption(addLogOptions(storage.command("rewrite").description("write every stored object again, encrypted with the first provider of its rule (after a key rotation)"))
    .option("--data-dir <dir>", "data directory of the stopped server")
    .option("--encryption-provider-config <file>", "the EncryptionConfiguration the server runs with")
    .option("--group-suffix <suffix>", "API group suffix of the configuration's apiVersion", DEFAULT_GROUP_SUFFIX)));
  addCaKeyKmsOption(command, "also wrap the data directory's CA key (pki/ca.key) with this kms provider of the configuration")
    .addHelpText("after", example)
    .action((flags: RewriteFlags) => rewrite(flags));
};

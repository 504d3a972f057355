// `platform-ca storage rewrite`: writes every stored object again with the first provider of its encryption rule, the
// step of a key rotation between making a new key first and removing the old one (the server must be stopped); with
// --ca-key-kms it also wraps the CA key file with that KMS provider (again, under its current key).
// `platform-ca storage bump-revision`: after a restore, moves the revision past every revision handed out before it
// and compacts there (docs/operations.md "Backups", "Backup and restore of etcd").
import { existsSync } from "node:fs";
import { join } from "node:path";
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

interface BumpFlags extends LogFlags, StorageFlags, EgressFlags {
  by?: string;
  dataDir?: string;
  groupSuffix: string;
}

async function bumpRevision(flags: BumpFlags): Promise<void> {
  if (flags.by === undefined) throw new UsageError("--by is required: at least the number of writes made after the backup");
  const by = /^\d+$/.test(flags.by) ? Number(flags.by) : NaN;
  if (!Number.isSafeInteger(by) || by < 1) throw new UsageError(`expected --by to be a positive whole number, got ${JSON.stringify(flags.by)}`);
  const backend = await storageBackend(flags);
  if (backend.kind === "etcd3" && flags.dataDir !== undefined) throw new UsageError("--data-dir names a SQLite store; with --etcd-servers the revision of etcd is moved, and the data directory is not read");
  applyLogFlags(flags);
  let fence: { readonly from: number; readonly to: number };
  if (backend.kind === "etcd3") {
    const egress = await readEgressSelector(flags, flags.groupSuffix, createLogger({ name: "storage" }));
    const { fenceEtcdRevision } = await import("../../apiserver/storage/etcd/revision-fence.js");
    fence = await fenceEtcdRevision({ ...backend.etcd, egress: egress.dialer("etcd") }, by);
  } else {
    if (flags.dataDir === undefined) throw new UsageError("--data-dir is required (or --etcd-servers for a store in etcd)");
    const [{ STORE_FILE }, { openSqliteStorage }] = await Promise.all([import("../../apiserver/bootstrap/store.js"), import("../../apiserver/storage/sqlite.js")]);
    const path = join(flags.dataDir, STORE_FILE);
    // A missing store is a mistyped directory, not an empty store to create.
    if (!existsSync(path)) throw new UsageError(`no store at ${path}: expected --data-dir to be a server's data directory`);
    // Opened exclusively: a server running on this data directory makes this fail rather than race it. Its "storage
    // opened" line is left out: the one line printed says the revisions.
    const storage = await openSqliteStorage({ path });
    try {
      fence = await storage.fenceRevision(by);
    } finally {
      await storage.close();
    }
  }
  process.stdout.write(`moved the revision from ${fence.from} to ${fence.to} and compacted at ${fence.to}\n`);
}

export const storageCommand: CommandModule = (program: Command) => {
  const rewriteExamples = [
    "platform-ca storage rewrite --data-dir /var/lib/platform-ca --encryption-provider-config encryption.yaml",
    "platform-ca storage rewrite --data-dir /var/lib/platform-ca --encryption-provider-config encryption.yaml --ca-key-kms kms1",
  ];
  // After a restore, every API server stopped (docs/operations.md "Backups", "Backup and restore of etcd").
  const bumpExamples = [
    "platform-ca storage bump-revision --data-dir /var/lib/platform-ca --by 1000000",
    "platform-ca storage bump-revision --by 100000 --etcd-servers https://10.0.0.1:2379 --etcd-cafile ca.crt --etcd-certfile client.crt --etcd-keyfile client.key",
  ];
  const examples = (lines: readonly string[]) => `\nExamples:\n${lines.map((l) => `  ${l}\n`).join("")}`;
  const storage = program.command("storage").description("maintenance of a stopped server's store").addHelpText("after", examples([...rewriteExamples, ...bumpExamples]));
  const command = addStorageOptions(addEgressOption(addLogOptions(storage.command("rewrite").description("write every stored object again, encrypted with the first provider of its rule (after a key rotation)"))
    .option("--data-dir <dir>", "data directory of the stopped server")
    .option("--encryption-provider-config <file>", "the EncryptionConfiguration the server runs with")
    .option("--group-suffix <suffix>", "API group suffix of the configuration's apiVersion", DEFAULT_GROUP_SUFFIX)));
  addCaKeyKmsOption(command, "also wrap the data directory's CA key (pki/ca.key) with this kms provider of the configuration")
    .addHelpText("after", examples(rewriteExamples))
    .action((flags: RewriteFlags) => rewrite(flags));
  addStorageOptions(addEgressOption(addLogOptions(storage.command("bump-revision").description("move the revision past the writes lost by a restore and compact there, so clients that saw them list again"))
    .option("--by <n>", "move the revision forward by at least this many: the writes made after the backup, or more")
    .option("--data-dir <dir>", "data directory of the stopped server (SQLite)")
    .option("--group-suffix <suffix>", "API group suffix of the egress configuration's apiVersion", DEFAULT_GROUP_SUFFIX)))
    .addHelpText("after", examples(bumpExamples))
    .action((flags: BumpFlags) => bumpRevision(flags));
};

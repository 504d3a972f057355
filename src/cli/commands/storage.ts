// `platform-ca storage rewrite`: writes every stored object again with the first provider of its encryption rule, the
// step of a key rotation between making a new key first and removing the old one (the server must be stopped); with
// --ca-key-kms it also wraps the CA key file with that KMS provider (again, under its current key).
// `platform-ca storage bump-revision`: after a restore, moves the revision past every revision handed out before it
// and compacts there (docs/operations.md "Backups", "Backup and restore of etcd").
// `platform-ca storage defrag`: gives a SQLite store's free pages back to the file system (etcdctl defrag for etcd).
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import type { SqliteStorage } from "../../apiserver/storage/sqlite-storage.js";
import { PlatformError } from "../../errors.js";
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
    const { storage } = await openStopped(flags.dataDir, "--data-dir is required (or --etcd-servers for a store in etcd)");
    try {
      fence = await storage.fenceRevision(by);
    } finally {
      await storage.close();
    }
  }
  process.stdout.write(`moved the revision from ${fence.from} to ${fence.to} and compacted at ${fence.to}\n`);
}

/**
 * The store of a stopped server's data directory, opened exclusively (a running server makes this fail, not race it);
 * `missing` is the usage error without --data-dir.
 */
async function openStopped(dataDir: string | undefined, missing: string): Promise<{ readonly path: string; readonly storage: SqliteStorage }> {
  if (dataDir === undefined) throw new UsageError(missing);
  const [{ STORE_FILE }, { openSqliteStorage }] = await Promise.all([import("../../apiserver/bootstrap/store.js"), import("../../apiserver/storage/sqlite.js")]);
  const path = join(dataDir, STORE_FILE);
  // A missing store is a mistyped directory, not an empty store to create.
  if (!existsSync(path)) throw new UsageError(`no store at ${path}: expected --data-dir to be a server's data directory`);
  // Its "storage opened" line is left out: the one line printed says what was done.
  return { path, storage: await openSqliteStorage({ path }) };
}

interface DefragFlags extends LogFlags, StorageFlags {
  dataDir?: string;
}

async function defrag(flags: DefragFlags): Promise<void> {
  if ((await storageBackend(flags)).kind === "etcd3") throw new UsageError("a store in etcd is defragmented by etcd: `etcdctl defrag --endpoints …`, one member at a time");
  applyLogFlags(flags);
  const { path, storage } = await openStopped(flags.dataDir, "--data-dir is required: the data directory of the stopped server");
  let before: number;
  try {
    // Checked first: a rebuild that fills the disk is rolled back, but only after it has filled it.
    const space = await import("./defrag-space.js");
    const problem = space.spaceShortfall(storage.defragmentSpace(), space.volume(dirname(path)), space.volume(space.sqliteTempDir()));
    if (problem !== undefined) throw new PlatformError("STORAGE_UNAVAILABLE", problem, { retryable: false });
    before = storage.defragment().before;
  } finally {
    await storage.close();
  }
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  // Closed, the log is copied in and the file has its new size.
  process.stdout.write(`defragmented ${path}: ${mib(before)} → ${mib(statSync(path).size)}\n`);
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
  const defragExamples = ["platform-ca storage defrag --data-dir /var/lib/platform-ca"];
  const examples = (lines: readonly string[]) => `\nExamples:\n${lines.map((l) => `  ${l}\n`).join("")}`;
  const storage = program.command("storage").description("maintenance of a stopped server's store").addHelpText("after", examples([...rewriteExamples, ...bumpExamples, ...defragExamples]));
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
  addStorageOptions(addLogOptions(storage.command("defrag").description("give the SQLite store's free pages back to the file system (compactions and deletes leave them for reuse)"))
    .option("--data-dir <dir>", "data directory of the stopped server"))
    .addHelpText("after", examples(defragExamples))
    .action((flags: DefragFlags) => defrag(flags));
};

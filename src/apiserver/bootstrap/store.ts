// Opens the server's store: SQLite in the data directory (the embedded default) or etcd (`--storage-backend etcd3`),
// holding text, or, with an encryption configuration, bytes under the encryption layer. Every path that opens a
// server's store goes through here.
import { join } from "node:path";
import type { Logger } from "../../logger.js";
import { loadEncryptionConfig, type EncryptionConfig } from "../encryption/config.js";
import { checkProvidersCoverStore, encryptedStorage, type EncryptedStorage } from "../encryption/encrypted-storage.js";
import { refuseEncrypted } from "../encryption/plain-guard.js";
import { reloadEncryptionConfig } from "../encryption/reload.js";
import { openSqliteByteStorage, openSqliteStorage } from "../storage/sqlite.js";
import type { Storage } from "../storage/types.js";
import type { EtcdStorageOptions } from "../storage/etcd/store.js";

/** Where the store lives: SQLite in the data directory unless etcd is named (reached through the `etcd` egress selection). */
export type StorageBackend = { readonly kind: "sqlite" } | { readonly kind: "etcd3"; readonly etcd: Pick<EtcdStorageOptions, "endpoints" | "tls" | "prefix" | "egress"> };

export const STORE_FILE = "store.db";

/** Reads `--encryption-provider-config` before anything is opened or created: a bad file must leave no trace. */
export async function loadEncryption(path: string | undefined, groupSuffix: string | undefined, logger: Logger): Promise<EncryptionConfig | undefined> {
  if (path === undefined) return undefined;
  const config = await loadEncryptionConfig(path, { ...(groupSuffix === undefined ? {} : { groupSuffix }), logger });
  logger.info({ path, rules: config.rules.map((r) => ({ resources: r.resources, write: r.transformers[0]!.name })) }, "encryption at rest configured");
  return config;
}

export interface DataStoreOptions {
  /** SQLite in the data directory (default) or etcd. */
  readonly backend?: StorageBackend;
  /** `--encryption-provider-config-automatic-reload`: follow the file the configuration was read from. */
  readonly reload?: { readonly groupSuffix?: string };
}

export async function openDataStore(dataDir: string, encryption: EncryptionConfig | undefined, logger: Logger, options: DataStoreOptions = {}): Promise<Storage> {
  const backend = options.backend ?? { kind: "sqlite" };
  const path = join(dataDir, STORE_FILE);
  // Loaded only when named: the gRPC client adds start-up time a SQLite server does not need.
  const etcd = backend.kind === "etcd3" ? { ...backend.etcd, logger } : undefined;
  const { openEtcdStorage } = etcd ? await import("../storage/etcd/store.js") : { openEtcdStorage: undefined };
  if (!encryption) return refuseEncrypted(etcd ? await openEtcdStorage!({ ...etcd }) : await openSqliteStorage({ path, logger }));
  const bytes = etcd ? await openEtcdStorage!<Uint8Array>({ ...etcd, values: "bytes" }) : await openSqliteByteStorage({ path, logger });
  try {
    await checkProvidersCoverStore(bytes, encryption);
  } catch (err) {
    for (const t of encryption.kms) t.close();
    await bytes.close();
    throw err;
  }
  // A plugin that does not answer yet is not fatal (upstream starts too): kms-providers fails readiness, and writes
  // through it fail, until it answers.
  await Promise.all(encryption.kms.map((t) => t.start()));
  const storage = encryptedStorage(bytes, encryption, { logger, reloadable: options.reload !== undefined });
  if (!options.reload) return storage;
  const reloader = reloadEncryptionConfig({ path: encryption.source, storage, inner: bytes, logger, ...options.reload });
  const reloading: EncryptedStorage = {
    ...storage,
    reloadStats: () => reloader.stats,
    async close() {
      reloader.stop();
      await storage.close();
    },
  };
  return reloading;
}

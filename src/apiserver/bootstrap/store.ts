// Opens the data directory's store: SQLite holding text, or, with an encryption configuration, SQLite holding bytes
// under the encryption layer. Every path that opens a data directory's store goes through here.
import { join } from "node:path";
import type { Logger } from "../../logger.js";
import { loadEncryptionConfig, type EncryptionConfig } from "../encryption/config.js";
import { checkProvidersCoverStore, encryptedStorage, type EncryptedStorage } from "../encryption/encrypted-storage.js";
import { refuseEncrypted } from "../encryption/plain-guard.js";
import { reloadEncryptionConfig } from "../encryption/reload.js";
import { openSqliteByteStorage, openSqliteStorage } from "../storage/sqlite.js";
import type { Storage } from "../storage/types.js";

export const STORE_FILE = "store.db";

/** Reads `--encryption-provider-config` before anything is opened or created: a bad file must leave no trace. */
export async function loadEncryption(path: string | undefined, groupSuffix: string | undefined, logger: Logger): Promise<EncryptionConfig | undefined> {
  if (path === undefined) return undefined;
  const config = await loadEncryptionConfig(path, { ...(groupSuffix === undefined ? {} : { groupSuffix }), logger });
  logger.info({ path, rules: config.rules.map((r) => ({ resources: r.resources, write: r.transformers[0]!.name })) }, "encryption at rest configured");
  return config;
}

export interface DataStoreOptions {
  /** `--encryption-provider-config-automatic-reload`: follow the file the configuration was read from. */
  readonly reload?: { readonly groupSuffix?: string };
}

export async function openDataStore(dataDir: string, encryption: EncryptionConfig | undefined, logger: Logger, options: DataStoreOptions = {}): Promise<Storage> {
  const path = join(dataDir, STORE_FILE);
  if (!encryption) return refuseEncrypted(await openSqliteStorage({ path, logger }));
  const bytes = await openSqliteByteStorage({ path, logger });
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

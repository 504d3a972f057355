// `--encryption-provider-config-automatic-reload`: the file is read again when it changes (a directory watch, and a
// poll in case the watch misses an edit). A new file is used only once it parses, its KMS plugins answer and it can
// read every stored value; otherwise the old configuration stays and the log says why. The replaced KMS providers
// close after twice the sum of their timeouts, as upstream, so calls in flight finish.
import { watchConfigFile } from "../../config/watched-file.js";
import type { Logger } from "../../logger.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import type { ByteStorage } from "../storage/types.js";
import { parseEncryptionConfig, type EncryptionConfig } from "./config.js";
import { checkProvidersCoverStore, type EncryptedStorage, type ReloadStats } from "./encrypted-storage.js";

export interface ReloadOptions {
  readonly path: string;
  readonly storage: EncryptedStorage;
  /** The bytes below the encryption layer, to check the new configuration reads every stored value. */
  readonly inner: ByteStorage;
  readonly groupSuffix?: string;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Poll interval besides the directory watch (default 60 s, upstream's). */
  readonly pollMs?: number;
}

export interface Reloader {
  readonly stats: ReloadStats;
  /** Reads the file now; resolves when done (tests, and the watch). */
  check(): Promise<void>;
  stop(): void;
}

export function reloadEncryptionConfig(o: ReloadOptions): Reloader {
  const clock = o.clock ?? systemClock;
  const stats: ReloadStats = { success: 0, failure: 0 };
  /** Replaced configurations whose KMS providers close after the grace time (or at stop). */
  const retiring = new Map<EncryptionConfig, CancelTimer>();
  const retire = (c: EncryptionConfig): void => {
    retiring.get(c)?.();
    retiring.delete(c);
    for (const t of c.kms) t.close();
  };

  const apply = async (text: string): Promise<void> => {
    let next: EncryptionConfig | undefined;
    try {
      next = parseEncryptionConfig(text, o.path, { ...(o.groupSuffix !== undefined && { groupSuffix: o.groupSuffix }), clock, logger: o.logger });
      const errors = (await Promise.all(next.kms.map((t) => t.start()))).filter((e) => e !== undefined);
      if (errors.length > 0) throw new Error(`a KMS plugin of the new configuration does not answer: ${errors.map((e) => e.message).join("; ")}`);
      await checkProvidersCoverStore(o.inner, next);
    } catch (err) {
      for (const t of next?.kms ?? []) t.close();
      throw err;
    }
    const old = o.storage.config();
    o.storage.setConfig(next);
    stats.success++;
    stats.lastSuccess = clock.now() / 1000;
    o.logger.info({ path: o.path, rules: next.rules.map((r) => ({ resources: r.resources, write: r.transformers[0]!.name })) }, "encryption configuration reloaded");
    const grace = 2 * old.kms.reduce((sum, t) => sum + t.settings.timeoutMs, 0);
    retiring.set(old, clock.setTimer(grace, () => retire(old)));
  };

  const file = watchConfigFile({
    path: o.path,
    initialDigest: o.storage.config().contentHash,
    pollMs: o.pollMs ?? 60_000,
    clock,
    logger: o.logger,
    apply,
    refused({ reason, code }) {
      // Editors replace a file by rename: a moment without it is not a new configuration.
      if (code === "ENOENT") return;
      stats.failure++;
      stats.lastFailure = clock.now() / 1000;
      o.logger.error({ path: o.path, reason }, "encryption configuration not reloaded: the running configuration stays");
    },
  });

  return {
    stats,
    check: async () => {
      await file.check();
    },
    stop() {
      file.stop();
      // The replaced providers close now: the store that used them is closing too.
      for (const c of [...retiring.keys()]) retire(c);
    },
  };
}

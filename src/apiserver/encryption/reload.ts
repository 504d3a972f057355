// `--encryption-provider-config-automatic-reload`: the file is read again when it changes (a directory watch, and a
// poll in case the watch misses an edit). A new file is used only once it parses, its KMS plugins answer and it can
// read every stored value; otherwise the old configuration stays and the log says why. The replaced KMS providers
// close after twice the sum of their timeouts, as upstream, so calls in flight finish.
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { Logger } from "../../logger.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import type { ByteStorage } from "../storage/types.js";
import { contentHash, parseEncryptionConfig, type EncryptionConfig } from "./config.js";
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
  let current = o.storage.config().contentHash;
  /** The last file refused: not tried (nor logged) again until it changes. */
  let refused: string | undefined;
  let queue = Promise.resolve();
  let stopped = false;
  let poll: CancelTimer | undefined;
  /** Replaced configurations whose KMS providers close after the grace time (or at stop). */
  const retiring = new Map<EncryptionConfig, CancelTimer>();
  const retire = (c: EncryptionConfig): void => {
    retiring.get(c)?.();
    retiring.delete(c);
    for (const t of c.kms) t.close();
  };

  const fail = (reason: string): void => {
    stats.failure++;
    stats.lastFailure = clock.now() / 1000;
    o.logger.error({ path: o.path, reason }, "encryption configuration not reloaded: the running configuration stays");
  };

  const attempt = async (): Promise<void> => {
    let text: string;
    try {
      text = await readFile(o.path, "utf8");
    } catch (err) {
      // Editors replace a file by rename: a moment without it is not a new configuration.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    const hash = contentHash(text);
    if (hash === current || hash === refused) return;
    let next: EncryptionConfig | undefined;
    try {
      next = parseEncryptionConfig(text, o.path, { ...(o.groupSuffix !== undefined && { groupSuffix: o.groupSuffix }), clock, logger: o.logger });
      const errors = (await Promise.all(next.kms.map((t) => t.start()))).filter((e) => e !== undefined);
      if (errors.length > 0) throw new Error(`a KMS plugin of the new configuration does not answer: ${errors.map((e) => e.message).join("; ")}`);
      await checkProvidersCoverStore(o.inner, next);
    } catch (err) {
      for (const t of next?.kms ?? []) t.close();
      refused = hash;
      fail((err as Error).message);
      return;
    }
    const old = o.storage.config();
    o.storage.setConfig(next);
    current = hash;
    refused = undefined;
    stats.success++;
    stats.lastSuccess = clock.now() / 1000;
    o.logger.info({ path: o.path, rules: next.rules.map((r) => ({ resources: r.resources, write: r.transformers[0]!.name })) }, "encryption configuration reloaded");
    const grace = 2 * old.kms.reduce((sum, t) => sum + t.settings.timeoutMs, 0);
    retiring.set(old, clock.setTimer(grace, () => retire(old)));
  };

  const check = (): Promise<void> => {
    queue = queue.then(() => (stopped ? undefined : attempt().catch((err: Error) => fail(err.message))));
    return queue;
  };

  let watcher: FSWatcher | undefined;
  try {
    // The directory, not the file: an editor's or a ConfigMap's rename replaces the inode a file watch would follow.
    watcher = watch(dirname(o.path), (_event, name) => {
      if (name === null || name === basename(o.path) || name.startsWith("..")) void check();
    });
    watcher.unref();
  } catch (err) {
    o.logger.warn({ path: o.path, err: (err as Error).message }, "cannot watch the encryption configuration's directory; polling it only");
  }
  const schedule = (): void => {
    poll = clock.setTimer(o.pollMs ?? 60_000, () => void check().finally(() => !stopped && schedule()));
  };
  schedule();

  return {
    stats,
    check,
    stop() {
      stopped = true;
      watcher?.close();
      poll?.();
      // The replaced providers close now: the store that used them is closing too.
      for (const c of [...retiring.keys()]) retire(c);
    },
  };
}

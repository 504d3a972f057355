// A store opened without an encryption configuration still refuses encrypted values, as upstream's identity
// transformer does: started without its --encryption-provider-config, a server fails those reads instead of handing
// ciphertext to clients (LIST would otherwise splice a resourceVersion into it) or writing over it.
import type { KeyValue, ListResult, Storage, StorageEvent, StoredValue, Watch } from "../storage/types.js";
import { ENCRYPTED_PREFIX, undecryptable } from "./providers.js";

const REASON = "identity: the value is encrypted and no --encryption-provider-config is given";

function check(kv: KeyValue): KeyValue {
  if (kv.value.startsWith(ENCRYPTED_PREFIX)) throw undecryptable(kv.key, [REASON]);
  return kv;
}

/** `storage` with every value read checked for the encrypted prefix (a string compare per value; no copies). */
export function refuseEncrypted(storage: Storage): Storage {
  return {
    revision: () => storage.revision(),
    compactedRevision: () => storage.compactedRevision(),
    compact: (revision) => storage.compact(revision),
    close: () => storage.close(),
    create: (key, value, ttlSeconds) => storage.create(key, value, ttlSeconds),
    update: (key, value, expected, ttlSeconds) => storage.update(key, value, expected, ttlSeconds),
    async get(key) {
      const kv = await storage.get(key);
      return kv && check(kv);
    },
    async list(prefix, options): Promise<ListResult> {
      const page = await storage.list(prefix, options);
      for (const kv of page.items) check(kv);
      return page;
    },
    delete: (key, expected) => storage.delete(key, expected),
    watch: (prefix, options, onEvent, onError) =>
      mappedWatch<string>((deliver) => storage.watch(prefix, options, deliver, onError), (ev) => (check(ev.kv), ev), onEvent, onError),
  };
}

/**
 * A watch whose events pass through `map` on the way out, in order: an event whose `map` must wait (a KMS plugin
 * unwrapping a data key) holds back the events and progress notifications after it. An event `map` cannot turn into
 * plain text ends the watch with the error: skipping it would lose an event, and the watcher relists (and meets the
 * error as a read).
 */
export function mappedWatch<V extends StoredValue>(
  start: (deliver: (ev: StorageEvent<V>) => void, progress: ((revision: number) => void) | undefined) => Watch,
  map: (ev: StorageEvent<V>) => StorageEvent | Promise<StorageEvent>,
  onEvent: (ev: StorageEvent) => void,
  onError: ((err: Error) => void) | undefined,
  onProgress?: (revision: number) => void,
): Watch {
  let failed = false;
  /** The delivery still waiting on a map, if any: later events queue behind it. */
  let pending: Promise<void> | undefined;
  const fail = (err: unknown): void => {
    if (failed) return;
    failed = true;
    // Delivery may begin before start() returns: cancel once it has.
    queueMicrotask(() => watch.cancel());
    onError?.(err as Error);
  };
  /** Runs `step` after the pending delivery; its failure (a map that rejected) ends the watch. */
  const queue = (step: () => void | Promise<void>): void => {
    const mine: Promise<void> = (pending ?? Promise.resolve()).then(() => (failed ? undefined : step())).then(
      () => {
        if (pending === mine) pending = undefined;
      },
      (err: unknown) => {
        if (pending === mine) pending = undefined;
        fail(err);
      },
    );
    pending = mine;
  };
  const deliver = (ev: StorageEvent<V>): void => {
    if (failed) return;
    if (pending !== undefined) {
      queue(() => {
        const out = map(ev);
        return out instanceof Promise ? out.then((o) => void (failed || onEvent(o))) : onEvent(out);
      });
      return;
    }
    let out: StorageEvent | Promise<StorageEvent>;
    try {
      out = map(ev);
    } catch (err) {
      fail(err);
      return;
    }
    // The common case, nothing waiting: delivered at once, and a throwing onEvent reaches the store as before.
    if (!(out instanceof Promise)) return onEvent(out);
    const waiting = out;
    queue(() => waiting.then((o) => void (failed || onEvent(o))));
  };
  const progress = onProgress && ((revision: number) => (pending === undefined ? onProgress(revision) : queue(() => onProgress(revision))));
  const watch = start(deliver, progress);
  return watch;
}

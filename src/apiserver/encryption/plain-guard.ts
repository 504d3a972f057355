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
    create: (key, value) => storage.create(key, value),
    update: (key, value, expected) => storage.update(key, value, expected),
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
 * A watch whose events pass through `map` on the way out. An event `map` cannot turn into plain text ends the watch
 * with the error: skipping it would lose an event, and the watcher relists (and meets the error as a read).
 */
export function mappedWatch<V extends StoredValue>(
  start: (deliver: (ev: StorageEvent<V>) => void) => Watch,
  map: (ev: StorageEvent<V>) => StorageEvent,
  onEvent: (ev: StorageEvent) => void,
  onError: ((err: Error) => void) | undefined,
): Watch {
  let failed = false;
  const watch = start((ev) => {
    if (failed) return;
    let out: StorageEvent;
    try {
      out = map(ev);
    } catch (err) {
      failed = true;
      // Delivery may begin before start() returns: cancel once it has.
      queueMicrotask(() => watch.cancel());
      onError?.(err as Error);
      return;
    }
    onEvent(out);
  });
  return watch;
}

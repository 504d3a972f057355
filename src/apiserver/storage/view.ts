// A collection served over another collection's keys (core v1 Events over events/v1): keys moved, values converted.
import type { KeyValue, ListOptions, ListResult, Storage, StorageEvent, Watch, WatchOptions } from "./types.js";

/**
 * How the objects under one view prefix are kept: under `storedPrefix`, in the stored kind's form. Both conversions
 * take and give storage text (JSON without resourceVersion). Upstream keeps one stored kind and converts on the way
 * in and out too; a view makes that conversion invisible to the registry, the list pages and the watch cache.
 */
export interface StorageView {
  readonly viewPrefix: string;
  readonly storedPrefix: string;
  toStored(text: string): string;
  fromStored(text: string): string;
}

/** `storage` with each view's keys answered from its stored prefix; every other key goes straight through. */
export function withViews(storage: Storage, views: readonly StorageView[]): Storage {
  if (views.length === 0) return storage;
  const viewOf = (key: string) => views.find((v) => key.startsWith(v.viewPrefix));
  const inner = (v: StorageView, key: string) => v.storedPrefix + key.slice(v.viewPrefix.length);
  const outer = (v: StorageView, kv: KeyValue): KeyValue => ({ ...kv, key: v.viewPrefix + kv.key.slice(v.storedPrefix.length), value: v.fromStored(kv.value) });
  return {
    revision: () => storage.revision(),
    compactedRevision: () => storage.compactedRevision(),
    compact: (revision) => storage.compact(revision),
    close: () => storage.close(),
    async get(key) {
      const v = viewOf(key);
      if (!v) return storage.get(key);
      const kv = await storage.get(inner(v, key));
      return kv && outer(v, kv);
    },
    async list(prefix: string, options?: ListOptions): Promise<ListResult> {
      const v = viewOf(prefix);
      if (!v) return storage.list(prefix, options);
      const startAfter = options?.startAfter !== undefined && viewOf(options.startAfter) === v ? inner(v, options.startAfter) : options?.startAfter;
      const page = await storage.list(inner(v, prefix), { ...options, startAfter });
      return { ...page, items: page.items.map((kv) => outer(v, kv)) };
    },
    async create(key, value, ttlSeconds) {
      const v = viewOf(key);
      return v ? outer(v, await storage.create(inner(v, key), v.toStored(value), ttlSeconds)) : storage.create(key, value, ttlSeconds);
    },
    async update(key, value, expectedModRevision, ttlSeconds) {
      const v = viewOf(key);
      return v ? outer(v, await storage.update(inner(v, key), v.toStored(value), expectedModRevision, ttlSeconds)) : storage.update(key, value, expectedModRevision, ttlSeconds);
    },
    async delete(key, expectedModRevision) {
      const v = viewOf(key);
      if (!v) return storage.delete(key, expectedModRevision);
      const r = await storage.delete(inner(v, key), expectedModRevision);
      return { ...r, prev: outer(v, r.prev) };
    },
    watch(prefix: string, options: WatchOptions, onEvent: (event: StorageEvent) => void, onError?: (err: Error) => void): Watch {
      const v = viewOf(prefix);
      if (!v) return storage.watch(prefix, options, onEvent, onError);
      return storage.watch(
        inner(v, prefix),
        options,
        (ev) => {
          const kv = outer(v, ev.kv);
          onEvent({ ...ev, key: kv.key, kv, ...(ev.prev ? { prev: outer(v, ev.prev) } : {}) });
        },
        onError,
      );
    },
  };
}

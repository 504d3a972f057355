// Objects stored per served resource, counted for apiserver_storage_objects (one keys-only count per resource).
import { qualifiedResource } from "./registry/errors.js";
import type { Registry } from "./registry/registry.js";

/**
 * Counts the keys under each stored resource's collection prefix, labelled `plural[.group]` as upstream; -1 for a
 * resource the store could not count. Create-only kinds (reviews) store nothing and are left out.
 */
export function storageObjectCounter(registry: Registry): () => Promise<ReadonlyMap<string, number>> {
  const stored = registry.catalog.definitions.filter((d) => !d.createOnly);
  return async () => {
    const counts = await Promise.all(
      stored.map(async (def) => {
        try {
          // One key and the number after it: the store counts without reading every value.
          const page = await registry.storage.list(registry.store(def).collectionPrefix, { limit: 1 });
          return page.items.length + (page.remaining ?? 0);
        } catch {
          return -1;
        }
      }),
    );
    return new Map(stored.map((def, i) => [qualifiedResource(def), counts[i]!]));
  };
}

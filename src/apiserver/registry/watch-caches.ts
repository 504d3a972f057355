// One watch cache per served resource, started on first use, adapted to the API's list and watch views.
import type { ApiObject } from "../../api/meta.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import type { Storage } from "../storage/types.js";
import { WatchCache, type WatchCacheOptions } from "../watch/cache.js";
import type { WatchFilter } from "../watch/cache-watcher.js";
import type { ObjectFilter } from "../selectors.js";
import type { CacheEvent } from "../watch/cached-object.js";
import type { ResourceStore } from "./generic.js";
import type { CachedCollection } from "./list.js";
import { StoredObject, withResourceVersion } from "./stored.js";
import type { ApiWatchEvent, WatchRequest, WatchSource } from "./watch.js";

export type WatchCacheSettings = Pick<WatchCacheOptions, "capacity" | "bookmarkIntervalMs" | "watcherBufferSize" | "freshnessTimeoutMs" | "decode">;

/**
 * What a list or watch of `prefix` asks of the resource-wide cache: the keys of that one namespace (a scope, decided
 * by the key alone, so the cache never decodes another namespace's objects) and the selector over the decoded object.
 */
function scoped(prefix: string, collectionPrefix: string, filter: ObjectFilter | undefined): { prefix?: string; filter?: WatchFilter } {
  return { ...(prefix !== collectionPrefix && { prefix }), ...(filter && { filter: Object.assign((obj: unknown) => filter(obj as ApiObject), { mayMatch: filter.mayMatch }) }) };
}

class CachedResource implements CachedCollection, WatchSource {
  readonly #started: Promise<void>;

  constructor(
    private readonly cache: WatchCache,
    private readonly store: ResourceStore,
  ) {
    this.#started = cache.start();
    // A failed first sync is retried by the cache; callers wait through waitUntilFresh.
    this.#started.catch(() => undefined);
  }

  async list(prefix: string, filter: ObjectFilter | undefined, name?: string) {
    const result = await this.cache.list({ ...scoped(prefix, this.store.collectionPrefix, filter), ...(name !== undefined && { name }) });
    return { items: result.items.map((kv) => new StoredObject(kv.key, kv.value, kv.modRevision)), revision: result.revision };
  }

  stop(): void {
    this.cache.stop();
  }

  waitUntilFresh(revision: number): Promise<void> {
    return this.cache.waitUntilFresh(revision);
  }

  async *watch(request: WatchRequest): AsyncIterable<ApiWatchEvent> {
    const watcher = await this.cache.watch({
      fromRevision: request.fromRevision,
      ...scoped(request.prefix, this.store.collectionPrefix, request.filter),
      ...(request.name !== undefined && { name: request.name }),
      sendInitialEvents: request.sendInitialEvents,
      allowBookmarks: request.allowBookmarks,
      signal: request.signal,
    });
    try {
      for await (const ev of watcher) yield this.toApi(ev);
    } finally {
      watcher.close();
    }
  }

  private toApi(ev: CacheEvent): ApiWatchEvent {
    if (ev.type === "BOOKMARK") {
      const metadata = { resourceVersion: String(ev.revision), ...(ev.annotations ? { annotations: { ...ev.annotations } } : {}) };
      return { type: "BOOKMARK", object: { apiVersion: this.store.apiVersion, kind: this.store.def.kind, metadata } };
    }
    return {
      type: ev.type,
      // Decoded only when asked for (a conversion): the fan-out sends the stored text (`json`), as a LIST page does. A
      // decode here for every watcher's event was 1.5% of the server's thread in a burst, and the decoded objects,
      // held by the cache's event window, a sixth of what its garbage collector moved to the old generation.
      // The cache shares decoded objects between watchers: copy what we change.
      get object() {
        const shared = ev.object() as ApiObject;
        return { ...shared, metadata: { ...shared.metadata, resourceVersion: String(ev.revision) } };
      },
      json: () => withResourceVersion(ev.value, ev.revision),
    };
  }
}

export class WatchCaches {
  readonly #caches = new Map<ResourceStore, CachedResource>();
  #stopped = false;

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: WatchCacheSettings = {},
  ) {}

  /** The cache of a resource, started on first use: resources nobody watches cost no memory. */
  for(store: ResourceStore): CachedResource | undefined {
    if (this.#stopped || store.def.createOnly) return undefined;
    let cached = this.#caches.get(store);
    if (!cached) {
      const cache = new WatchCache({ ...this.settings, storage: this.storage, prefix: store.collectionPrefix, clock: this.clock, logger: this.logger });
      cached = new CachedResource(cache, store);
      this.#caches.set(store, cached);
    }
    return cached;
  }

  stop(): void {
    this.#stopped = true;
    for (const c of this.#caches.values()) c.stop();
    this.#caches.clear();
  }
}

// What the watch cache is built with and asked: its options, and those of a list or a watch (scope, filter, name).
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import type { Storage } from "../storage/types.js";
import type { CachedObject, Decoder } from "./cached-object.js";
import type { WatchFilter } from "./cache-watcher.js";

export interface WatchCacheOptions {
  readonly storage: Storage;
  /** Key prefix of the resource, e.g. `/<group>/<resource>/`. */
  readonly prefix: string;
  /** Events kept for watches that resume from a revision; default 10,000. */
  readonly capacity?: number;
  /** Interval of BOOKMARK events to watchers that allow them; default 60 s. */
  readonly bookmarkIntervalMs?: number;
  /** Live events a watcher may have unread before it is closed (GONE, relist); default 1,000. */
  readonly watcherBufferSize?: number;
  /** Default wait for a revision the cache has not seen yet; default 3 s, then TIMEOUT. */
  readonly freshnessTimeoutMs?: number;
  /** Delay before listing again after the storage watch failed; default 1 s. */
  readonly retryDelayMs?: number;
  readonly initialEventsEndAnnotation?: string;
  readonly decode?: Decoder;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/**
 * Only the keys under `prefix` (one namespace of a namespaced collection; the whole cache when absent): others are
 * passed over by their key, undecoded, and a list or the initial events visit only the keys in it.
 */
export interface CacheScope {
  readonly prefix?: string;
}

export interface CacheWatchOptions extends CacheScope {
  /** Events after this revision; 0/undefined: from now. Older than the ring → GONE; newer than the cache → wait. */
  readonly fromRevision?: number;
  readonly filter?: WatchFilter;
  /**
   * Only the object of this name (an exact `metadata.name` field selector), held to by its key: live events of other
   * objects are not even offered to the watcher. The filter, when there is one, decides among that object's events.
   */
  readonly name?: string;
  /** Start with ADDED for every current object (then, with allowBookmarks, the initial-events-end BOOKMARK). */
  readonly sendInitialEvents?: boolean;
  readonly allowBookmarks?: boolean;
  readonly signal?: AbortSignal;
}

export interface CacheListOptions extends CacheScope {
  /** 0/undefined: whatever the cache holds (resourceVersion "0"); otherwise not older than this revision. */
  readonly revision?: number;
  readonly filter?: WatchFilter;
  /** Only the object of this name: other objects are passed over by their key, undecoded. */
  readonly name?: string;
  /** At most this many items (0/undefined: all). */
  readonly limit?: number;
  readonly startAfter?: string;
  readonly signal?: AbortSignal;
}

export interface CacheListResult {
  readonly items: readonly CachedObject[];
  readonly revision: number;
  readonly more: boolean;
  /** Items after the last one returned; only without a filter. */
  readonly remaining?: number;
}

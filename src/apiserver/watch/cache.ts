// The watch cache of one resource prefix: ONE storage watch feeds a current-state map and a ring of recent events,
// and every API watch and cache-served list is answered from memory.
import { PlatformError, invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { Storage, StorageEvent, Watch } from "../storage/types.js";
import { checkKey, checkPrefix, checkRevision, prefixEnd } from "../storage/checks.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import { OrderedKeys } from "../storage/ordered-keys.js";
import { CachedObject, RingEvent, type CacheEvent, type Decoder } from "./cached-object.js";
import type { CacheListOptions, CacheListResult, CacheScope, CacheWatchOptions, WatchCacheOptions } from "./cache-options.js";
import { CacheWatcher, selects } from "./cache-watcher.js";
import { INITIAL_EVENTS_END_ANNOTATION, historyEvents, initialEvents } from "./backlog.js";
import { EventRing } from "./ring.js";
import { FreshnessWaiters } from "./freshness.js";
import { keyName, WatcherIndex } from "./watcher-index.js";

export type { CacheListOptions, CacheListResult, CacheScope, CacheWatchOptions, WatchCacheOptions } from "./cache-options.js";

const positive = (name: string, value: number | undefined, fallback: number, min = 1): number => {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < min) throw invalidOption(name, `to be an integer ≥ ${min}`, v);
  return v;
};

/**
 * A watch from before the cache's window: upstream's 410 Expired wording (its watch cache says the same), since
 * the revision may well still be in storage; the client lists again and watches from the list's revision.
 */
const tooOld = (revision: number, oldest: number) => new PlatformError("GONE", `too old resource version: ${revision} (${oldest})`);

export class WatchCache {
  readonly #storage: Storage;
  readonly #prefix: string;
  readonly #end: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #decode: Decoder;
  readonly #annotation: string;
  readonly #bookmarkMs: number;
  readonly #bufferSize: number;
  readonly #freshnessMs: number;
  readonly #retryMs: number;
  readonly #objects = new Map<string, CachedObject>();
  readonly #keys = new OrderedKeys();
  readonly #ring: EventRing;
  readonly #watchers = new WatcherIndex();
  readonly #fresh: FreshnessWaiters;
  #revision = 0;
  /** Oldest revision a watch may resume from: every later event is in the ring. */
  #floor = 0;
  #ready = false;
  #stopped = true;
  #storageWatch: Watch | undefined;
  /** The bookmark timer while ready, the relist timer while not. */
  #cancelTimer: CancelTimer | undefined;
  /** Bumped on every reset so a list still in flight from before cannot install stale state. */
  #generation = 0;
  #synced: Promise<void> | undefined;

  constructor(options: WatchCacheOptions) {
    if (typeof options?.storage?.watch !== "function") throw invalidOption("storage", "to be a Storage", options?.storage);
    checkPrefix(options.prefix);
    this.#storage = options.storage;
    this.#prefix = options.prefix;
    this.#end = prefixEnd(options.prefix);
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger();
    this.#decode = options.decode ?? JSON.parse;
    this.#annotation = options.initialEventsEndAnnotation ?? INITIAL_EVENTS_END_ANNOTATION;
    this.#ring = new EventRing(positive("capacity", options.capacity, 10_000));
    this.#bookmarkMs = positive("bookmarkIntervalMs", options.bookmarkIntervalMs, 60_000, 100);
    this.#bufferSize = positive("watcherBufferSize", options.watcherBufferSize, 1000);
    this.#freshnessMs = positive("freshnessTimeoutMs", options.freshnessTimeoutMs, 3000);
    this.#retryMs = positive("retryDelayMs", options.retryDelayMs, 1000);
    this.#fresh = new FreshnessWaiters(this.#clock, () => (this.#ready ? this.#revision : -1));
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** Newest revision the cache has seen (events or progress). */
  get revision(): number {
    return this.#revision;
  }

  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Lists and starts the one storage watch; resolves once the cache holds the current state. */
  start(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return this.#synced;
    this.#stopped = false;
    signal?.addEventListener("abort", () => this.stop(), { once: true });
    this.#synced = this.#fresh.wait(0, Infinity, undefined);
    // A caller that does not await start() must not see an unhandled rejection when the cache stops first.
    this.#synced.catch(() => {});
    void this.#sync();
    return this.#synced;
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#reset();
    this.#fresh.rejectAll(new PlatformError("NOT_READY", `watch cache of ${this.#prefix} stopped`));
    this.#synced = undefined;
  }

  /** Resolves once the cache has seen `revision` (NotOlderThan); TIMEOUT after `timeoutMs`. */
  waitUntilFresh(revision: number, options: { readonly timeoutMs?: number; readonly signal?: AbortSignal } = {}): Promise<void> {
    checkRevision("revision", revision, false);
    if (this.#stopped) return Promise.reject(new PlatformError("NOT_READY", `watch cache of ${this.#prefix} is not running`));
    return this.#fresh.wait(revision, options.timeoutMs ?? this.#freshnessMs, options.signal);
  }

  get(key: string): CachedObject | undefined {
    return this.#objects.get(key);
  }

  async list(options: CacheListOptions = {}): Promise<CacheListResult> {
    checkRevision("revision", options.revision);
    checkRevision("limit", options.limit);
    if (options.startAfter !== undefined) checkKey(options.startAfter);
    const revision = options.revision ?? 0;
    const [start, end] = this.#scope(options);
    if (!this.#ready || revision > this.#revision) await this.waitUntilFresh(revision, { signal: options.signal });
    // Seek to the first key of the page and walk only as far as the page (or the filter) needs.
    const after = options.startAfter !== undefined && options.startAfter >= start;
    const from = after ? options.startAfter! : start;
    const limit = options.limit || Infinity;
    const items: CachedObject[] = [];
    for (const key of this.#keys.from(from, after)) {
      if (key >= end || items.length > limit) break;
      // A list of one name (an exact metadata.name field selector) looks at the others' keys only, decoding none.
      if (options.name !== undefined && keyName(key) !== options.name) continue;
      const object = this.#objects.get(key)!;
      if (!options.filter || selects(options.filter, object)) items.push(object);
    }
    const more = items.length > limit;
    if (more) items.pop();
    const remaining = options.filter || options.name !== undefined ? undefined : this.#keys.count(from, end, after) - items.length;
    return { items, revision: this.#revision, more, ...(remaining === undefined ? {} : { remaining }) };
  }

  async watch(options: CacheWatchOptions = {}): Promise<CacheWatcher> {
    const from = options.fromRevision ?? 0;
    checkRevision("fromRevision", from);
    const [start, end] = this.#scope(options);
    const prefix = options.prefix;
    if (!this.#ready || from > this.#revision) await this.waitUntilFresh(from, { signal: options.signal });
    // From here on everything is synchronous: the backlog ends exactly where live delivery starts.
    let backlog: Iterator<CacheEvent> | undefined;
    if (options.sendInitialEvents) {
      const last = options.allowBookmarks ? { revision: this.#revision, annotation: this.#annotation } : undefined;
      // The objects of the scope as they are now (the backlog is read later, as the client takes it).
      const objects: CachedObject[] = [];
      for (const key of this.#keys.from(start, false)) {
        if (key >= end) break;
        objects.push(this.#objects.get(key)!);
      }
      backlog = initialEvents(objects, options.filter, last, options.name);
    } else if (from > 0) {
      if (from < this.#floor) throw tooOld(from, this.#floor);
      backlog = historyEvents(this.#ring.since(from), options.filter, options.name, prefix);
    }
    const watcher = new CacheWatcher({
      ...(prefix !== undefined && { prefix }),
      filter: options.filter,
      allowBookmarks: options.allowBookmarks ?? false,
      bufferSize: this.#bufferSize,
      backlog,
      signal: options.signal,
      onClose: (w) => this.#watchers.delete(w),
    });
    if (!watcher.closed) this.#watchers.add(watcher, options.name);
    return watcher;
  }

  /** The first key and the end (exclusive) of the keys an operation looks at: its scope's, or the whole cache's. */
  #scope(options: CacheScope): [string, string] {
    if (options.prefix === undefined) return [this.#prefix, this.#end];
    checkPrefix(options.prefix);
    if (!options.prefix.startsWith(this.#prefix)) throw invalidOption("prefix", `to be within ${this.#prefix}`, options.prefix);
    return [options.prefix, prefixEnd(options.prefix)];
  }

  async #sync(): Promise<void> {
    const generation = this.#generation;
    const current = () => !this.#stopped && generation === this.#generation;
    try {
      const items: CachedObject[] = [];
      let revision = 0;
      let startAfter: string | undefined;
      for (let more = true; more && current(); ) {
        const page = await this.#storage.list(this.#prefix, { limit: 1000, startAfter, revision });
        for (const kv of page.items) items.push(new CachedObject(kv, this.#decode));
        [revision, more, startAfter] = [page.revision, page.more, page.items.at(-1)?.key];
      }
      if (!current()) return;
      for (const object of items) {
        this.#objects.set(object.key, object);
        this.#keys.insert(object.key);
      }
      this.#revision = this.#floor = revision;
      this.#storageWatch = this.#storage.watch(
        this.#prefix,
        // The first progress report means the watch has replayed what was written while the list was read and
        // now receives writes as they commit: from then on the cache is ready.
        { fromRevision: revision, onProgress: (rev) => this.#progress(rev) },
        (event) => this.#apply(event),
        (err) => this.#failed(err),
      );
    } catch (err) {
      if (current()) this.#failed(err as Error);
    }
  }

  #apply(event: StorageEvent): void {
    const existing = this.#objects.get(event.key);
    let ringEvent: RingEvent;
    if (event.type === "PUT") {
      const current = new CachedObject(event.kv, this.#decode);
      const previous = existing ?? (event.prev && new CachedObject(event.prev, this.#decode));
      if (!existing) this.#keys.insert(event.key);
      this.#objects.set(event.key, current);
      ringEvent = new RingEvent(false, current, previous, event.revision);
    } else {
      const last = existing ?? new CachedObject(event.kv, this.#decode);
      this.#keys.remove(event.key);
      this.#objects.delete(event.key);
      ringEvent = new RingEvent(true, last, last, event.revision);
    }
    const evicted = this.#ring.push(ringEvent);
    if (evicted) this.#floor = evicted.revision;
    this.#revision = event.revision;
    this.#watchers.offer(ringEvent);
    this.#fresh.check();
  }

  #progress(revision: number): void {
    this.#revision = revision;
    if (!this.#ready) {
      this.#ready = true;
      this.#scheduleBookmarks();
      this.#logger.debug({ prefix: this.#prefix, revision, objects: this.#objects.size }, "watch cache synced");
    }
    this.#fresh.check();
  }

  /** The storage watch ended: every watcher must relist, and the cache lists again after a pause. */
  #failed(err: Error): void {
    if (this.#stopped) return;
    this.#logger.warn({ err, prefix: this.#prefix }, "watch cache lost its storage watch; listing again");
    this.#reset();
    this.#cancelTimer = this.#clock.setTimer(this.#retryMs, () => void this.#sync());
  }

  #reset(): void {
    this.#generation++;
    this.#ready = false;
    this.#storageWatch?.cancel();
    this.#storageWatch = undefined;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    const reason = new PlatformError("GONE", `watch cache of ${this.#prefix} is re-initializing; list again`);
    for (const watcher of [...this.#watchers]) watcher.close(this.#stopped ? undefined : reason);
    this.#objects.clear();
    this.#keys.clear();
    this.#ring.clear();
  }

  #scheduleBookmarks(): void {
    this.#cancelTimer = this.#clock.setTimer(this.#bookmarkMs, () => {
      for (const watcher of this.#watchers) watcher.offerBookmark(this.#revision);
      this.#scheduleBookmarks();
    });
  }
}

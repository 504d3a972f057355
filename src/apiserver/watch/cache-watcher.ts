// One API watch on the cache: a backlog (history or initial state) then live events, with selector transitions
// and a bounded buffer that closes the watch when its consumer falls behind.
import { PlatformError, toPlatformError } from "../../errors.js";
import { bookmark, type CacheEvent, type RingEvent } from "./cached-object.js";

/**
 * Selector over the decoded object (and its key); the API layer builds it from label and field selectors. `mayMatch`,
 * when set, is a necessary condition on the stored text: an object whose text fails it is passed over undecoded.
 */
export interface WatchFilter {
  (object: unknown, key: string): boolean;
  readonly mayMatch?: (text: string) => boolean;
}

/** Whether `filter` selects the stored object, decoding it only when its text may match. */
export function selects(filter: WatchFilter, stored: { readonly key: string; readonly value: string; object(): unknown }): boolean {
  return filter.mayMatch?.(stored.value) !== false && filter(stored.object(), stored.key);
}

/**
 * The event a watcher with this filter sees, or undefined: an update that leaves the selector is DELETED for it,
 * one that enters it is ADDED, as upstream's cache does.
 */
export function transition(event: RingEvent, filter: WatchFilter | undefined): CacheEvent | undefined {
  const { current, previous } = event;
  if (!filter) return event.view(event.deleted ? "DELETED" : previous ? "MODIFIED" : "ADDED");
  const now = !event.deleted && selects(filter, current);
  const before = previous !== undefined && selects(filter, previous);
  if (now) return event.view(before ? "MODIFIED" : "ADDED");
  return before ? event.view("DELETED") : undefined;
}

export interface CacheWatcherSetup {
  /** Only keys under it (one namespace): others are passed over by their key, before any decoding. */
  readonly prefix?: string;
  readonly filter: WatchFilter | undefined;
  readonly allowBookmarks: boolean;
  /** Live events held for a consumer that has not read them yet; one more closes the watch. */
  readonly bufferSize: number;
  /** Delivered before any live event: history from the ring, or the initial state. */
  readonly backlog: Iterator<CacheEvent> | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onClose: (watcher: CacheWatcher) => void;
}

export class CacheWatcher implements AsyncIterableIterator<CacheEvent> {
  readonly #setup: CacheWatcherSetup;
  #backlog: Iterator<CacheEvent> | undefined;
  #buffer: CacheEvent[] = [];
  #wake: (() => void) | undefined;
  #closed = false;
  #error: Error | undefined;
  readonly #onAbort = () => this.close();

  constructor(setup: CacheWatcherSetup) {
    this.#setup = setup;
    this.#backlog = setup.backlog;
    if (setup.signal?.aborted) this.close();
    else setup.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Live events waiting for the consumer. */
  get buffered(): number {
    return this.#buffer.length;
  }

  /** Called by the cache for every write, synchronously in revision order. */
  offer(event: RingEvent): void {
    if (this.#closed) return;
    if (this.#setup.prefix !== undefined && !event.key.startsWith(this.#setup.prefix)) return;
    let seen: CacheEvent | undefined;
    try {
      seen = transition(event, this.#setup.filter);
    } catch (err) {
      this.close(toPlatformError(err));
      return;
    }
    if (seen) this.#push(seen);
  }

  offerBookmark(revision: number): void {
    if (!this.#closed && this.#setup.allowBookmarks) this.#push(bookmark(revision));
  }

  /** Ends the watch; with an error, the consumer's next read throws it (GONE: list again, then watch). */
  close(error?: Error): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#error = error;
    this.#buffer = [];
    this.#backlog = undefined;
    this.#setup.signal?.removeEventListener("abort", this.#onAbort);
    this.#setup.onClose(this);
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<CacheEvent>> {
    for (;;) {
      if (this.#closed) {
        const error = this.#error;
        this.#error = undefined;
        if (error) throw error;
        return { done: true, value: undefined };
      }
      const event = this.#fromBacklog() ?? this.#buffer.shift();
      if (event) return { done: false, value: event };
      if (this.#closed) continue;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  async return(): Promise<IteratorResult<CacheEvent>> {
    this.close();
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #fromBacklog(): CacheEvent | undefined {
    if (!this.#backlog) return undefined;
    try {
      const r = this.#backlog.next();
      if (!r.done) return r.value;
      this.#backlog = undefined;
    } catch (err) {
      this.close(toPlatformError(err));
    }
    return undefined;
  }

  #push(event: CacheEvent): void {
    if (this.#buffer.length >= this.#setup.bufferSize) {
      this.close(new PlatformError("GONE", `watch closed: its reader fell ${this.#buffer.length} events behind; list again and resume from the list's revision`, {
        details: { reason: "SlowConsumer", buffered: this.#buffer.length },
      }));
      return;
    }
    this.#buffer.push(event);
    this.#wake?.();
  }
}

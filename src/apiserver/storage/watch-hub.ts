// In-process fan-out of committed writes to storage watchers: history catch-up, then live delivery in revision order.
import type { Logger } from "../../logger.js";
import { toPlatformError } from "../../errors.js";
import type { StorageEvent, StoredValue, Watch, WatchOptions } from "./types.js";
import { prefixEnd } from "./checks.js";

/** What a backend lends the hub to replay history. Both calls are synchronous, so a read sees every commit so far. */
export interface HistoryReader<V extends StoredValue> {
  /** Events under the prefix with revision > after, oldest first, at most `limit`. Throws GONE below the compacted revision. */
  readEvents(prefix: string, end: string, after: number, limit: number): StorageEvent<V>[];
  currentRevision(): number;
}

interface Subscriber<V extends StoredValue> {
  readonly prefix: string;
  readonly end: string;
  /** Revision of the last event delivered (or skipped as already seen). */
  cursor: number;
  /** False while the subscriber replays history; live writes are then read from the log instead. */
  live: boolean;
  cancelled: boolean;
  readonly onEvent: (event: StorageEvent<V>) => void;
  readonly onError: ((err: Error) => void) | undefined;
  readonly onProgress: ((revision: number) => void) | undefined;
}

const PAGE = 500;

export class WatchHub<V extends StoredValue> {
  readonly #reader: HistoryReader<V>;
  readonly #logger: Logger;
  readonly #subscribers = new Set<Subscriber<V>>();
  readonly #queue: StorageEvent<V>[] = [];
  #draining = false;

  constructor(reader: HistoryReader<V>, logger: Logger) {
    this.#reader = reader;
    this.#logger = logger;
  }

  get size(): number {
    return this.#subscribers.size;
  }

  subscribe(prefix: string, options: WatchOptions, onEvent: (e: StorageEvent<V>) => void, onError?: (err: Error) => void): Watch {
    const sub: Subscriber<V> = {
      prefix,
      end: prefixEnd(prefix),
      cursor: options.fromRevision === 0 ? this.#reader.currentRevision() : options.fromRevision,
      live: false,
      cancelled: false,
      onEvent,
      onError,
      onProgress: options.onProgress,
    };
    this.#subscribers.add(sub);
    setImmediate(() => this.#catchUp(sub));
    return { cancel: () => this.#drop(sub) };
  }

  /** Called by the backend right after a commit; delivery is synchronous but never re-entrant, so order holds. */
  publish(event: StorageEvent<V>): void {
    this.#queue.push(event);
    if (this.#draining) return;
    this.#draining = true;
    try {
      for (let ev = this.#queue.shift(); ev !== undefined; ev = this.#queue.shift()) {
        for (const sub of this.#subscribers) {
          if (!sub.live || sub.cancelled || ev.revision <= sub.cursor) continue;
          sub.cursor = ev.revision;
          if (ev.key >= sub.prefix && ev.key < sub.end) this.#deliver(sub, ev);
          else if (sub.onProgress) this.#call(sub, sub.onProgress, ev.revision);
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  /** Ends every watch with this error (storage closing or failing). */
  closeAll(err: Error): void {
    for (const sub of [...this.#subscribers]) this.#fail(sub, err);
  }

  /**
   * Replays the log page by page; goes live only after a read that finds nothing new. That read and the switch
   * happen in one synchronous step, so no commit can fall between history and live delivery.
   */
  #catchUp(sub: Subscriber<V>): void {
    while (!sub.cancelled) {
      let events: StorageEvent<V>[];
      try {
        events = this.#reader.readEvents(sub.prefix, sub.end, sub.cursor, PAGE);
      } catch (err) {
        this.#fail(sub, toPlatformError(err));
        return;
      }
      if (events.length === 0) {
        sub.live = true;
        // Nothing more under the prefix up to the current revision: a progress listener learns that it has seen
        // that far and that every later write now reaches it as it commits.
        const now = this.#reader.currentRevision();
        sub.cursor = Math.max(sub.cursor, now);
        if (sub.onProgress) this.#call(sub, sub.onProgress, now);
        return;
      }
      for (const ev of events) {
        if (sub.cancelled) return;
        sub.cursor = ev.revision;
        this.#deliver(sub, ev);
      }
      if (events.length === PAGE) {
        // A long replay yields to the event loop between pages.
        setImmediate(() => this.#catchUp(sub));
        return;
      }
    }
  }

  #deliver(sub: Subscriber<V>, ev: StorageEvent<V>): void {
    this.#call(sub, sub.onEvent, ev);
  }

  #call<T>(sub: Subscriber<V>, fn: (arg: T) => void, arg: T): void {
    try {
      fn(arg);
    } catch (err) {
      this.#logger.warn({ err, prefix: sub.prefix }, "storage watcher failed; cancelling it");
      this.#fail(sub, toPlatformError(err));
    }
  }

  #fail(sub: Subscriber<V>, err: Error): void {
    if (sub.cancelled) return;
    this.#drop(sub);
    try {
      sub.onError?.(err);
    } catch (inner) {
      this.#logger.warn({ err: inner, prefix: sub.prefix }, "storage watcher error handler failed");
    }
  }

  #drop(sub: Subscriber<V>): void {
    sub.cancelled = true;
    this.#subscribers.delete(sub);
  }
}

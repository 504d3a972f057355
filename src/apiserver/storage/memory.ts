// In-memory storage: the current key space plus an event log for list-at-revision and watch-from-revision.
import { silentLogger, type Logger } from "../../logger.js";
import type { KeyValue, ListResult, StorageEvent, StoredValue, ValueKind } from "./types.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { BaseStorage, type ListRange } from "./base-storage.js";
import { resolveRetention, revisionTarget, type RetentionOptions } from "./retention.js";
import { OrderedKeys } from "./ordered-keys.js";

export interface MemoryStorageOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** History kept for list/watch at older revisions; default the last 10,000 revisions, no age limit. */
  readonly retention?: RetentionOptions;
  /** JSON text (default) or bytes, for a layer above that writes bytes (encryption at rest). */
  readonly values?: ValueKind;
}

export class MemoryStorage<V extends StoredValue = string> extends BaseStorage<V> {
  readonly #current = new Map<string, KeyValue<V>>();
  readonly #keys = new OrderedKeys();
  /** Events with revision > compacted, oldest first, from index #head on; write times alongside. */
  #log: StorageEvent<V>[] = [];
  #times: number[] = [];
  #head = 0;
  readonly #retention;

  constructor(options: MemoryStorageOptions = {}) {
    super(options.clock ?? systemClock, options.logger ?? silentLogger(), options.values ?? "text");
    this.#retention = resolveRetention(options.retention, { revisions: 10_000, ageMs: Infinity });
  }

  protected readKey(key: string): KeyValue<V> | undefined {
    return this.#current.get(key);
  }

  protected transaction<T>(fn: () => T): T {
    return fn();
  }

  protected append(event: StorageEvent<V>, ts: number): void {
    if (event.type === "PUT") {
      if (!event.prev) this.#keys.insert(event.key);
      this.#current.set(event.key, event.kv);
    } else {
      this.#keys.remove(event.key);
      this.#current.delete(event.key);
    }
    this.#log.push(event);
    this.#times.push(ts);
  }

  protected listLatest(range: ListRange): ListResult<V> {
    const [from, after] = this.#start(range);
    const items: KeyValue<V>[] = [];
    for (const key of this.#keys.from(from, after)) {
      if (key >= range.end || (range.limit !== 0 && items.length === range.limit)) break;
      items.push(this.#current.get(key)!);
    }
    const remaining = this.#keys.count(from, range.end, after) - items.length;
    return { items, revision: this.rev, more: remaining > 0, remaining };
  }

  /**
   * Undoes the events after `revision`: each key takes the value it had before its earliest later event. Walks the
   * current keys from the page start merged with the keys those events touched, so a page costs its own length plus
   * the events since `revision`, not the size of the range.
   */
  protected listAt(range: ListRange, revision: number): ListResult<V> {
    const before = new Map<string, KeyValue<V> | undefined>();
    for (let i = this.#log.length - 1; i >= this.#head && this.#log[i]!.revision > revision; i--) {
      const ev = this.#log[i]!;
      if (this.#inRange(ev.key, range)) before.set(ev.key, ev.type === "PUT" ? ev.prev : ev.kv);
    }
    const changed = [...before.keys()].sort();
    const [from, after] = this.#start(range);
    const current = this.#keys.from(from, after);
    let next = current.next();
    let c = 0;
    const items: KeyValue<V>[] = [];
    let more = false;
    for (;;) {
      const live = next.done || next.value >= range.end ? undefined : next.value;
      const key = live === undefined || (c < changed.length && changed[c]! < live) ? changed[c] : live;
      if (key === undefined) break;
      if (key === live) next = current.next();
      if (key === changed[c]) c++;
      const kv = before.has(key) ? before.get(key) : this.#current.get(key);
      if (!kv) continue;
      if (range.limit !== 0 && items.length === range.limit) {
        more = true;
        break;
      }
      items.push(kv);
    }
    return { items, revision, more };
  }

  protected readEvents(prefix: string, end: string, after: number, limit: number): StorageEvent<V>[] {
    const out: StorageEvent<V>[] = [];
    for (let i = this.#firstAfter(after); i < this.#log.length && out.length < limit; i++) {
      const ev = this.#log[i]!;
      if (ev.key >= prefix && ev.key < end) out.push(ev);
    }
    return out;
  }

  protected compactTo(revision: number): void {
    this.#head = this.#firstAfter(revision);
    this.compacted = revision;
    // Drop the consumed front in bulk rather than shifting on every write.
    if (this.#head > 1024 && this.#head * 2 > this.#log.length) {
      this.#log = this.#log.slice(this.#head);
      this.#times = this.#times.slice(this.#head);
      this.#head = 0;
    }
  }

  protected retain(): void {
    let target = revisionTarget(this.#retention, this.rev);
    const cutoff = this.clock.now() - this.#retention.ageMs;
    for (let i = this.#head; i < this.#log.length && this.#times[i]! < cutoff; i++) target = Math.max(target, this.#log[i]!.revision);
    if (target > this.compacted) this.compactTo(target);
  }

  protected release(): void {
    this.#current.clear();
    this.#log = [];
    this.#times = [];
    this.#head = 0;
  }

  /** Index of the first retained event with revision > `revision`. */
  #firstAfter(revision: number): number {
    let lo = this.#head;
    let hi = this.#log.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#log[mid]!.revision <= revision) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Where a page starts: the key to seek to, and whether that key itself is excluded. */
  #start(range: ListRange): [string, boolean] {
    return range.startAfter !== undefined && range.startAfter >= range.from ? [range.startAfter, true] : [range.from, false];
  }

  #inRange(key: string, range: ListRange): boolean {
    return key >= range.from && key < range.end && (range.startAfter === undefined || key > range.startAfter);
  }
}

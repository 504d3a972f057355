// The semantics every embedded backend shares: argument checks, preconditions, the global revision, GONE rules and
// watch fan-out. A backend supplies synchronous reads, a transaction, and how events are kept and compacted.
import { PlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { KeyValue, ListOptions, ListResult, Storage, StorageEvent, StoredValue, ValueKind, Watch, WatchOptions } from "./types.js";
import type { Clock } from "../../time/clock.js";
import { alreadyExists, checkKey, checkPrefix, checkRevision, checkValue, closed, conflict, futureRevision, gone, notFound, prefixEnd } from "./checks.js";
import { WatchHub } from "./watch-hub.js";
import { Expirer } from "./expiry.js";

/** When a write with a time to live expires (ms): set as the write is decided, read as it is persisted and published. */
const EXPIRES = new WeakMap<StorageEvent<StoredValue>, number>();

/** The time (ms) a write's key expires at, when it was written with a time to live. */
export function expiryOf(event: StorageEvent<StoredValue>): number | undefined {
  return EXPIRES.get(event);
}

/** A list request after checks: the key range [from, end), strictly after `startAfter`, `limit` 0 = all. */
export interface ListRange {
  readonly from: string;
  readonly end: string;
  readonly startAfter: string | undefined;
  readonly limit: number;
}

/** Turns the key's current entry into the write's event, or throws when a precondition fails. */
export type WriteDecision<V extends StoredValue> = (prev: KeyValue<V> | undefined) => StorageEvent<V>;

export abstract class BaseStorage<V extends StoredValue = string> implements Storage<V> {
  protected readonly hub: WatchHub<V>;
  /** Whether values are JSON text or bytes (checked on every write). */
  protected readonly kind: ValueKind;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  /** The one global revision; a fresh store starts at 1 like etcd, the first write gets 2. */
  protected rev = 1;
  protected compacted = 0;
  #closed = false;
  /** Deletes the keys written with a time to live once it is up. */
  protected readonly expirer: Expirer;

  protected constructor(clock: Clock, logger: Logger, kind: ValueKind) {
    this.kind = kind;
    this.clock = clock;
    this.logger = logger;
    this.hub = new WatchHub(
      {
        readEvents: (prefix, end, after, limit) => this.guard(() => {
          this.checkReadable(after);
          return this.readEvents(prefix, end, after, limit);
        }),
        currentRevision: () => this.rev,
      },
      logger,
    );
    this.expirer = new Expirer(clock, logger, (key, rev) => this.delete(key, rev));
  }

  /** The key's latest entry; called inside a write transaction too. */
  protected abstract readKey(key: string): KeyValue<V> | undefined;
  /** Persists one event as part of the current transaction. */
  protected abstract append(event: StorageEvent<V>, ts: number): void;
  protected abstract transaction<T>(fn: () => T): T;
  protected abstract listLatest(range: ListRange): ListResult<V>;
  protected abstract listAt(range: ListRange, revision: number): ListResult<V>;
  protected abstract readEvents(prefix: string, end: string, after: number, limit: number): StorageEvent<V>[];
  /** Forgets history up to and including `revision` (revision becomes the oldest readable). */
  protected abstract compactTo(revision: number): void;
  /** Applies the retention policy after a write. */
  protected abstract retain(): void;
  protected abstract release(): void;

  /** Runs a backend call, turning backend failures into typed errors (overridden by backends with their own errors). */
  protected guard<T>(fn: () => T): T {
    return fn();
  }

  async revision(): Promise<number> {
    this.checkOpen();
    return this.rev;
  }

  async compactedRevision(): Promise<number> {
    this.checkOpen();
    return this.compacted;
  }

  async get(key: string): Promise<KeyValue<V> | undefined> {
    this.checkOpen();
    checkKey(key);
    return this.guard(() => this.readKey(key));
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListResult<V>> {
    this.checkOpen();
    checkPrefix(prefix);
    checkRevision("list revision", options.revision);
    checkRevision("list limit", options.limit);
    if (options.startAfter !== undefined) checkKey(options.startAfter);
    const range: ListRange = { from: prefix, end: prefixEnd(prefix), startAfter: options.startAfter, limit: options.limit ?? 0 };
    const revision = options.revision ?? 0;
    if (revision === 0 || revision === this.rev) return this.guard(() => this.listLatest(range));
    this.checkReadable(revision);
    if (revision > this.rev) throw futureRevision(revision, this.rev);
    return this.guard(() => this.listAt(range, revision));
  }

  async create(key: string, value: V, ttlSeconds?: number): Promise<KeyValue<V>> {
    this.checkOpen();
    checkKey(key);
    checkValue(value, this.kind);
    checkRevision("ttlSeconds", ttlSeconds);
    const event = await this.write(key, (prev) => {
      if (prev) throw alreadyExists(key);
      const revision = this.rev + 1;
      const kv: KeyValue<V> = { key, value, createRevision: revision, modRevision: revision };
      return this.#expiring({ type: "PUT", key, kv, revision }, ttlSeconds);
    });
    return event.kv;
  }

  async update(key: string, value: V, expectedModRevision?: number, ttlSeconds?: number | "keep"): Promise<KeyValue<V>> {
    this.checkOpen();
    checkKey(key);
    checkValue(value, this.kind);
    checkRevision("expectedModRevision", expectedModRevision);
    if (ttlSeconds !== "keep") checkRevision("ttlSeconds", ttlSeconds);
    const event = await this.write(key, (prev) => {
      const cur = this.precondition(key, prev, expectedModRevision);
      const revision = this.rev + 1;
      const kv: KeyValue<V> = { key, value, createRevision: cur.createRevision, modRevision: revision };
      return this.#expiring({ type: "PUT", key, kv, prev: cur, revision }, ttlSeconds);
    });
    return event.kv;
  }

  /**
   * A put's event, marked with its expiry when written with a time to live (decided at commit, so timed from it) or
   * told to keep the key's.
   */
  #expiring(event: StorageEvent<V>, ttlSeconds: number | "keep" | undefined): StorageEvent<V> {
    const at = ttlSeconds === "keep" ? this.expirer.expiryOf(event.key) : ttlSeconds ? this.clock.now() + ttlSeconds * 1000 : undefined;
    if (at !== undefined) EXPIRES.set(event, at);
    return event;
  }

  async delete(key: string, expectedModRevision?: number): Promise<{ readonly prev: KeyValue<V>; readonly revision: number }> {
    this.checkOpen();
    checkKey(key);
    checkRevision("expectedModRevision", expectedModRevision);
    const event = await this.write(key, (prev) => {
      const cur = this.precondition(key, prev, expectedModRevision);
      return { type: "DELETE", key, kv: cur, prev: cur, revision: this.rev + 1 };
    });
    return { prev: event.kv, revision: event.revision };
  }

  watch(prefix: string, options: WatchOptions, onEvent: (event: StorageEvent<V>) => void, onError?: (err: Error) => void): Watch {
    this.checkOpen();
    checkPrefix(prefix);
    checkRevision("watch fromRevision", options.fromRevision, false);
    return this.hub.subscribe(prefix, options, onEvent, onError);
  }

  async compact(revision: number): Promise<void> {
    this.checkOpen();
    checkRevision("compact revision", revision, false);
    if (revision > this.rev) {
      throw new PlatformError("INVALID_ARGUMENT", `cannot compact to revision ${revision}: the current revision is ${this.rev}`);
    }
    if (revision > this.compacted) this.guard(() => this.compactTo(revision));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.expirer.close();
    this.hub.closeAll(closed());
    this.release();
  }

  protected checkOpen(): void {
    if (this.#closed) throw closed();
  }

  protected checkReadable(revision: number): void {
    if (revision < this.compacted) throw gone(revision, this.compacted);
  }

  /**
   * Read, decide, persist and publish one write in its own transaction; the revision moves only once the commit
   * returned. A backend may override this to commit several writes together (see `apply` and `committed`).
   */
  protected write(key: string, decide: WriteDecision<V>): StorageEvent<V> | Promise<StorageEvent<V>> {
    const start = this.rev;
    let event: StorageEvent<V>;
    try {
      event = this.guard(() => this.transaction(() => this.apply(key, decide)));
    } catch (err) {
      this.rev = start;
      throw err;
    }
    this.committed([event]);
    return event;
  }

  /**
   * Decides and persists one write inside the current transaction, and advances the revision so that the next write
   * of the same transaction sees it; a backend that groups writes resets `rev` itself when its commit fails.
   */
  protected apply(key: string, decide: WriteDecision<V>): StorageEvent<V> {
    const event = decide(this.readKey(key));
    this.append(event, this.clock.now());
    this.rev = event.revision;
    return event;
  }

  /** After a commit: publishes its events in revision order, then applies retention. */
  protected committed(events: readonly StorageEvent<V>[]): void {
    for (const event of events) {
      this.hub.publish(event);
      const at = EXPIRES.get(event);
      if (at !== undefined) this.expirer.add({ at, key: event.key, rev: event.revision });
      else this.expirer.forget(event.key);
    }
    try {
      this.guard(() => this.retain());
    } catch (err) {
      // The writes are committed; failing them now would make the callers retry writes that already happened.
      this.logger.warn({ err }, "storage compaction failed; history is kept until the next attempt");
    }
  }

  private precondition(key: string, cur: KeyValue<V> | undefined, expected: number | undefined): KeyValue<V> {
    if (!cur) throw notFound(key);
    if (expected !== undefined && expected !== cur.modRevision) throw conflict(key, expected, cur.modRevision);
    return cur;
  }
}

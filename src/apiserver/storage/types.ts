// The storage contract of the API server: an etcd-like ordered key space with one global revision.
//
// Keys are `/<group>/<resource>/<namespace>/<name>` (cluster-scoped: `/<group>/<resource>/<name>`).
// Values are JSON text of the object *without* metadata.resourceVersion: the registry sets it from
// `modRevision` on the way out. Backends keep bytes: a backend opened for text stores the UTF-8 of the text, one
// opened for bytes (`Storage<Uint8Array>`) lets a layer above it (encryption at rest) store what it wants. Every write bumps the one global revision and is acknowledged only
// after it is durable. A durable embedded backend (SQLite) and an in-memory backend implement this;
// a distributed backend (etcd) can plug in behind the same interface.

/** What a backend holds per key: JSON text, or bytes for the layers that transform values (encryption at rest). */
export type StoredValue = string | Uint8Array;

export interface KeyValue<V extends StoredValue = string> {
  readonly key: string;
  readonly value: V;
  /** Revision of the write that created this key (etcd create_revision). */
  readonly createRevision: number;
  /** Revision of the last write to this key (etcd mod_revision): the object's resourceVersion. */
  readonly modRevision: number;
}

export interface ListOptions {
  /** Read the key space as it was at this revision (0 / undefined = latest). Older than the compacted revision → GONE. */
  readonly revision?: number;
  /** At most this many items (0 / undefined = all). */
  readonly limit?: number;
  /** Start strictly after this key (for `continue`). */
  readonly startAfter?: string;
}

export interface ListResult<V extends StoredValue = string> {
  readonly items: readonly KeyValue<V>[];
  /** The revision the list was read at; reuse it for the next page to get a consistent snapshot. */
  readonly revision: number;
  /** True when items were cut by `limit`. */
  readonly more: boolean;
  /** Number of keys after the last returned one, when known. */
  readonly remaining?: number;
}

export type WatchEventType = "PUT" | "DELETE";

export interface StorageEvent<V extends StoredValue = string> {
  readonly type: WatchEventType;
  readonly key: string;
  /** The new value (PUT) or the last value before deletion (DELETE). */
  readonly kv: KeyValue<V>;
  /** The value before this write (PUT of an existing key, DELETE); undefined for a create. */
  readonly prev?: KeyValue<V>;
  /** Revision of this event (equals kv.modRevision for PUT; the delete's revision for DELETE). */
  readonly revision: number;
}

export interface WatchOptions {
  /** Deliver every event with revision > fromRevision (0 = only new events). Compacted → GONE. */
  readonly fromRevision: number;
  /**
   * Progress notification (etcd `progress_notify`), called in order with the events: once when the replay of
   * history is done (from then on writes arrive as they commit), then whenever a write outside `prefix` moves the
   * store's revision forward. Lets a cache prove it has seen everything up to a revision.
   */
  readonly onProgress?: (revision: number) => void;
}

export interface Watch {
  /** Stops delivery; idempotent. */
  cancel(): void;
}

export interface Storage<V extends StoredValue = string> {
  /** Current (latest) revision of the whole store. */
  revision(): Promise<number>;
  /** Oldest revision still readable by list/watch; anything older answers GONE. */
  compactedRevision(): Promise<number>;
  get(key: string): Promise<KeyValue<V> | undefined>;
  /** Keys with this prefix, in key order. */
  list(prefix: string, options?: ListOptions): Promise<ListResult<V>>;
  /**
   * Fails with ALREADY_EXISTS when the key exists. Returns the stored entry. With `ttlSeconds` (> 0) the key is
   * deleted, with a DELETE event like any delete, that many seconds after this write unless written again first
   * (etcd's lease; upstream keeps Events this way for `--event-ttl`).
   */
  create(key: string, value: V, ttlSeconds?: number): Promise<KeyValue<V>>;
  /**
   * Replaces the value. With `expectedModRevision`, fails with CONFLICT when the key's modRevision differs.
   * Fails with NOT_FOUND when the key does not exist. `ttlSeconds` as for create, timed from this write; without it
   * the key is kept until deleted (a put without a lease in etcd); `"keep"` leaves the key the expiry it had (etcd's
   * ignore_lease), for writes that only re-encode a value.
   */
  update(key: string, value: V, expectedModRevision?: number, ttlSeconds?: number | "keep"): Promise<KeyValue<V>>;
  /** Deletes and returns the last entry. NOT_FOUND when absent; CONFLICT on a stale expectedModRevision. */
  delete(key: string, expectedModRevision?: number): Promise<{ readonly prev: KeyValue<V>; readonly revision: number }>;
  /** Streams events for keys under `prefix`, in revision order, starting after `fromRevision`. */
  watch(prefix: string, options: WatchOptions, onEvent: (event: StorageEvent<V>) => void, onError?: (err: Error) => void): Watch;
  /** Forget history up to (not including) this revision. */
  compact(revision: number): Promise<void>;
  close(): Promise<void>;
}

/** A backend holding bytes, below a layer that turns text into bytes (encryption at rest). */
export type ByteStorage = Storage<Uint8Array>;

/** Whether a backend takes JSON text or bytes. */
export type ValueKind = "text" | "bytes";

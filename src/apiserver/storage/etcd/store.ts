// The storage contract on etcd: preconditions as transactions on mod_revision, lists as ranges at a revision, watches
// with prev_kv from a revision, resourceVersion = etcd revision. Values go to etcd as bytes, so encryption fits on top.
import { PlatformError, toPlatformError } from "../../../errors.js";
import { silentLogger, type Logger } from "../../../logger.js";
import { systemClock, type Clock } from "../../../time/clock.js";
import type { KeyValue, ListOptions, ListResult, Storage, StorageEvent, StoredValue, ValueKind, Watch, WatchOptions } from "../types.js";
import { alreadyExists, checkKey, checkPrefix, checkRevision, checkValue, closed, conflict, futureRevision, gone, notFound, prefixEnd } from "../checks.js";
import type { RetentionOptions } from "../retention.js";
import { EtcdClient, type EtcdClientOptions, type KvMethod } from "./client.js";
import { EtcdCompactor } from "./compactor.js";
import { b, compare, compactRevKey, etcdError, etcdPrefix, type RangeResponse, type TxnResponse } from "./kv.js";
import type { EtcdHeader, EtcdKeyValue } from "./proto.js";
import { EtcdTicker } from "./ticker.js";
import { LeaseManager } from "./leases.js";
import { EtcdWatchStream, type WatchStreamOptions } from "./watch-stream.js";

export interface EtcdStorageOptions extends EtcdClientOptions {
  /** Prefix of every key in etcd (upstream: /registry); default /platform-ca. */
  readonly prefix?: string;
  /** History kept; default: revisions older than 5 minutes are compacted (upstream's compaction interval). */
  readonly retention?: RetentionOptions;
  readonly values?: ValueKind;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly watch?: WatchStreamOptions;
}

/** Opens an etcd-backed store and checks that a member answers. */
export async function openEtcdStorage<V extends StoredValue = string>(options: EtcdStorageOptions): Promise<Storage<V>> {
  const client = await EtcdClient.open(options);
  let store: EtcdStorage<V>;
  try {
    store = new EtcdStorage<V>(options, client);
  } catch (err) {
    await client.close();
    throw err;
  }
  try {
    await store.revision();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

export class EtcdStorage<V extends StoredValue = string> implements Storage<V> {
  readonly #client: EtcdClient;
  readonly #prefix: string;
  readonly #kind: ValueKind;
  readonly #watches: EtcdWatchStream;
  readonly #compactor: EtcdCompactor;
  readonly #ticker: EtcdTicker;
  /** Leases of the keys written with a time to live. */
  readonly #leases: LeaseManager;
  /** Highest revision any etcd response has shown this replica: "now" for a watch from revision 0. */
  #lastSeen = 0;
  /** The last write per key still in flight: etcd applies concurrent requests in any order, callers expect call order. */
  readonly #inFlight = new Map<string, Promise<unknown>>();
  #closed = false;

  /** `client`: from `EtcdClient.open` when the members are reached through an egress proxy. */
  constructor(options: EtcdStorageOptions, client = new EtcdClient(options)) {
    const prefix = etcdPrefix(options.prefix);
    this.#prefix = prefix;
    this.#kind = options.values ?? "text";
    this.#client = client;
    const logger = options.logger ?? silentLogger();
    this.#watches = new EtcdWatchStream(this.#client, logger, options.watch);
    const [key, end] = this.#range("");
    this.#ticker = new EtcdTicker(this.#watches, { key: key.toString("latin1"), end: end.toString("latin1") }, () => this.#lastSeen);
    this.#leases = new LeaseManager(async (ttl) => (await this.#call<{ ID: string }>("LeaseGrant", { TTL: ttl }, true)).ID, options.clock ?? systemClock);
    this.#compactor = new EtcdCompactor((m, r, w) => this.#call(m, r, w), b(compactRevKey(prefix)), options.retention, options.clock ?? systemClock, logger);
  }

  async revision(): Promise<number> {
    this.#checkOpen();
    const res = await this.#call<RangeResponse>("Range", { key: b(`${this.#prefix}/`), count_only: true, limit: 1 });
    return res.header.revision;
  }

  async compactedRevision(): Promise<number> {
    this.#checkOpen();
    return this.#compactor.compacted();
  }

  async get(key: string): Promise<KeyValue<V> | undefined> {
    this.#checkOpen();
    checkKey(key);
    const res = await this.#call<RangeResponse>("Range", { key: this.#key(key) });
    return res.kvs[0] && this.#kv(res.kvs[0]);
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListResult<V>> {
    this.#checkOpen();
    checkPrefix(prefix);
    checkRevision("list revision", options.revision);
    checkRevision("list limit", options.limit);
    if (options.startAfter !== undefined) checkKey(options.startAfter);
    const [from, end] = this.#range(prefix);
    const after = options.startAfter === undefined ? undefined : Buffer.concat([this.#key(options.startAfter), Buffer.from([0])]);
    const start = after && Buffer.compare(after, from) > 0 ? after : from;
    const revision = options.revision ?? 0;
    if (revision > 0 && revision < this.#compactor.known) throw gone(revision, this.#compactor.known);
    const res = await this.#call<RangeResponse>("Range", { key: start, range_end: end, limit: options.limit ?? 0, revision }).catch(async (err: unknown) => {
      throw await this.#readError(err, revision);
    });
    const items = res.kvs.map((kv) => this.#kv(kv));
    return { items, revision: revision || res.header.revision, more: res.more, remaining: res.count - items.length };
  }

  async create(key: string, value: V, ttlSeconds?: number): Promise<KeyValue<V>> {
    this.#checkOpen();
    checkKey(key);
    checkValue(value, this.#kind);
    checkRevision("ttlSeconds", ttlSeconds);
    const k = this.#key(key);
    const res = await this.#leased(ttlSeconds, (lease) => this.#txn([compare(k, "CREATE", "EQUAL", 0)], [{ request_put: { key: k, value: Buffer.from(value), lease } }], []));
    if (!res.succeeded) throw alreadyExists(key);
    const revision = res.header.revision;
    return this.#written({ key, value, createRevision: revision, modRevision: revision });
  }

  async update(key: string, value: V, expectedModRevision?: number, ttlSeconds?: number | "keep"): Promise<KeyValue<V>> {
    this.#checkOpen();
    checkKey(key);
    checkValue(value, this.#kind);
    checkRevision("expectedModRevision", expectedModRevision);
    if (ttlSeconds !== "keep") checkRevision("ttlSeconds", ttlSeconds);
    const k = this.#key(key);
    const put = (lease: object) => this.#txn(this.#preconditions(k, expectedModRevision), [{ request_put: { key: k, value: Buffer.from(value), prev_kv: true, ...lease } }], [{ request_range: { key: k } }]);
    // "keep": etcd leaves the key on the lease it has (ignore_lease).
    const res = ttlSeconds === "keep" ? await put({ ignore_lease: true }) : await this.#leased(ttlSeconds, (lease) => put({ lease }));
    if (!res.succeeded) throw this.#refused(key, res, expectedModRevision);
    const prev = res.responses[0]!.response_put!.prev_kv!;
    return this.#written({ key, value, createRevision: prev.create_revision, modRevision: res.header.revision });
  }

  async delete(key: string, expectedModRevision?: number): Promise<{ readonly prev: KeyValue<V>; readonly revision: number }> {
    this.#checkOpen();
    checkKey(key);
    checkRevision("expectedModRevision", expectedModRevision);
    const k = this.#key(key);
    const res = await this.#txn(this.#preconditions(k, expectedModRevision), [{ request_delete_range: { key: k, prev_kv: true } }], [{ request_range: { key: k } }]);
    if (!res.succeeded) throw this.#refused(key, res, expectedModRevision);
    await this.#afterWrite(res.header.revision);
    return { prev: this.#kv(res.responses[0]!.response_delete_range!.prev_kvs[0]!), revision: res.header.revision };
  }

  watch(prefix: string, options: WatchOptions, onEvent: (event: StorageEvent<V>) => void, onError?: (err: Error) => void): Watch {
    this.#checkOpen();
    checkPrefix(prefix);
    checkRevision("watch fromRevision", options.fromRevision, false);
    let cancel: (() => void) | undefined;
    let cancelled = false;
    const fail = (err: Error) => {
      if (!cancelled) onError?.(err);
      cancelled = true;
    };
    // The start revision first (current for 0), and GONE below the compacted revision as the other backends answer it.
    const from = options.fromRevision || this.#lastSeen;
    void (async () => {
      if (!from) throw new PlatformError("STORAGE_UNAVAILABLE", "etcd has not answered yet");
      const compacted = await this.#compactor.compacted();
      if (options.fromRevision > 0 && options.fromRevision < compacted) throw gone(options.fromRevision, compacted);
      if (cancelled) return;
      this.#ticker.ensure();
      const [key, end] = this.#range(prefix);
      cancel = this.#watches.add({
        key: key.toString("latin1"),
        end: end.toString("latin1"),
        after: from,
        onEvents: (events) => {
          for (const e of events) if (!cancelled) onEvent(this.#event(e.type, e.kv, e.prev_kv));
        },
        onProgress: (revision) => {
          if (!cancelled) options.onProgress?.(revision);
        },
        onError: fail,
      });
    })().catch((err: unknown) => fail(this.#closed ? closed() : toPlatformError(err)));
    return {
      cancel: () => {
        cancelled = true;
        cancel?.();
      },
    };
  }

  async compact(revision: number): Promise<void> {
    this.#checkOpen();
    checkRevision("compact revision", revision, false);
    await this.#compactor.compact(revision).catch((err: unknown) => {
      if (/future revision/.test((err as Error).message)) {
        throw new PlatformError("INVALID_ARGUMENT", `cannot compact to revision ${revision}: it is newer than the current revision`);
      }
      throw err;
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#ticker.close();
    this.#watches.close(closed());
    this.#compactor.stop();
    await this.#client.close();
  }

  /**
   * A put under a lease of `ttlSeconds` (none: lease 0, the key kept until deleted). A lease etcd no longer knows
   * (revoked, or the cluster restored from a backup without it) is forgotten and the put tried once more on a new one.
   */
  async #leased(ttlSeconds: number | undefined, put: (lease: string) => Promise<TxnResponse>): Promise<TxnResponse> {
    if (!ttlSeconds) return put("0");
    const lease = await this.#leases.lease(ttlSeconds);
    try {
      return await put(lease);
    } catch (err) {
      if (!/requested lease not found/.test((err as Error).message)) throw err;
      this.#leases.forget(lease);
      return put(await this.#leases.lease(ttlSeconds));
    }
  }

  async #txn(compares: object[], success: object[], failure: object[]): Promise<TxnResponse> {
    const key = (compares[0] as { key: Buffer }).key.toString("latin1");
    const before = this.#inFlight.get(key);
    const run = (before ?? Promise.resolve()).catch(() => {}).then(() => this.#call<TxnResponse>("Txn", { compare: compares, success, failure }, true));
    this.#inFlight.set(key, run);
    try {
      return await run;
    } finally {
      if (this.#inFlight.get(key) === run) this.#inFlight.delete(key);
    }
  }

  #preconditions(k: Buffer, expected: number | undefined): object[] {
    const exists = compare(k, "CREATE", "GREATER", 0);
    return expected === undefined ? [exists] : [exists, compare(k, "MOD", "EQUAL", expected)];
  }

  #refused(key: string, res: TxnResponse, expected: number | undefined): PlatformError {
    const cur = res.responses[0]?.response_range?.kvs[0];
    return cur ? conflict(key, expected!, cur.mod_revision) : notFound(key);
  }

  async #written(kv: KeyValue<V>): Promise<KeyValue<V>> {
    await this.#afterWrite(kv.modRevision);
    return kv;
  }

  /**
   * Retention, then (while watches are open) a bounded wait until the watch stream has passed the write on: a
   * write acknowledged by this replica has then reached this replica's watchers, as with the embedded backends.
   */
  async #afterWrite(revision: number): Promise<void> {
    await this.#compactor.wrote(revision);
    await this.#ticker.passed(revision, 250);
  }

  async #call<T>(method: KvMethod, request: object, write = false): Promise<T> {
    this.#checkOpen();
    try {
      const res = await this.#client.call<T>(method, request, write);
      const revision = (res as { header?: EtcdHeader }).header?.revision ?? 0;
      if (revision > this.#lastSeen) this.#lastSeen = revision;
      return res;
    } catch (err) {
      throw this.#closed ? closed() : etcdError(err, method);
    }
  }

  async #readError(err: unknown, revision: number): Promise<Error> {
    const message = (err as Error).message;
    if (/required revision has been compacted/.test(message)) return gone(revision, await this.#compactor.compacted().catch(() => revision + 1));
    if (/future revision/.test(message)) return futureRevision(revision, await this.revision().catch(() => 0));
    return err as Error;
  }

  #checkOpen(): void {
    if (this.#closed) throw closed();
  }

  #key(key: string): Buffer {
    return b(this.#prefix + key);
  }

  /** The etcd range of a storage prefix; "" is every key under `prefix/` (keys start with "/"). */
  #range(prefix: string): [Buffer, Buffer] {
    const p = prefix === "" ? "/" : prefix;
    return [b(this.#prefix + p), b(this.#prefix + prefixEnd(p))];
  }

  #kv(kv: EtcdKeyValue): KeyValue<V> {
    const value = (this.#kind === "text" ? kv.value.toString("utf8") : new Uint8Array(kv.value)) as V;
    return { key: kv.key.toString("latin1").slice(this.#prefix.length), value, createRevision: kv.create_revision, modRevision: kv.mod_revision };
  }

  #event(type: "PUT" | "DELETE", kv: EtcdKeyValue, prevKv: EtcdKeyValue | null): StorageEvent<V> {
    const prev = prevKv ? this.#kv(prevKv) : undefined;
    if (type === "DELETE") return { type, key: prev!.key, kv: prev!, prev: prev!, revision: kv.mod_revision };
    const cur = this.#kv(kv);
    return { type, key: cur.key, kv: cur, ...(prev && { prev }), revision: kv.mod_revision };
  }
}

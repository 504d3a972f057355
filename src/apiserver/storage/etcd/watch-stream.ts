// Every watch of one etcd store multiplexed on ONE gRPC watch stream, re-created from the last seen revision on another
// member when the stream breaks. One stream matters: etcd sends the responses of one stream's synced watchers in
// revision order, so a "ticker" watching the whole key space gives each watcher per-write progress (which etcd 3.4
// cannot give: its progress request answers without waiting for sync). That order is not a promise etcd always keeps
// (a watcher still replaying its history in batches, or one whose responses waited for a slow reader), so progress
// from the ticker is only reported, never used to skip events, and stops short of any write the ticker showed in a
// watcher's range that the watcher has not delivered yet; an event that still comes after reported progress ends the
// watch with GONE.
import type { ClientDuplexStream } from "@grpc/grpc-js";
import type { Logger } from "../../../logger.js";
import { toPlatformError, PlatformError } from "../../../errors.js";
import type { EtcdClient } from "./client.js";
import type { EtcdEvent, EtcdWatchResponse } from "./proto.js";

export interface WatchTarget {
  /** etcd key range [key, end). */
  readonly key: string;
  readonly end: string;
  /** Last revision already seen: events after it are delivered. */
  readonly after: number;
  /** `synced`: the watcher had provably replayed its history before these events (they are live, in stream order). */
  onEvents(events: readonly EtcdEvent[], synced: boolean): void;
  /** Everything in the range up to `revision` has been delivered; `proven` is false after a quiet period (see #assume). */
  onProgress(revision: number, proven: boolean): void;
  /** The watch cannot continue (compacted history, closed store). */
  onError(err: Error): void;
  /** Handle this watcher's responses after every other watcher's that arrived in the same turn (the ticker). */
  readonly last?: boolean;
}

interface Sub {
  readonly id: number;
  readonly target: WatchTarget;
  /**
   * Revision up to which everything in the range has provably been delivered by this watcher's own responses
   * (events, etcd's progress for it): resume point and duplicate filter. Never moved by an assumption or by the
   * ticker, so neither can lose an event.
   */
  cursor: number;
  /** Highest progress reported to the target (reports only go forward). */
  reported: number;
  /**
   * Revisions of this range the ticker has shown that this watcher has not delivered yet, ascending: its response
   * can come after the ticker's (etcd queues a watcher's responses for a slow reader apart from the others), so no
   * progress is reported to it at or past the first of them.
   */
  pending: number[];
  /** Revision etcd was at when this watcher was (re)created; history up to it is being replayed. */
  createdAt: number;
  /** Whether history up to createdAt has provably been delivered, so later revisions arrive in order with the ticker's. */
  synced: boolean;
  /** Replay assumed complete after a quiet period (no proof): progress is reported, the cursor stays. */
  assumed: boolean;
  quiet: NodeJS.Timeout | undefined;
  cancelled: boolean;
}

/** etcd's `watchBatchMaxRevs`: the most distinct revisions one history response of a replaying watcher holds. */
export const WATCH_BATCH_MAX_REVS = 1000;

function distinctRevisions(events: readonly EtcdEvent[]): number {
  let count = 0;
  let last = -1;
  for (const e of events) {
    if (e.kv.mod_revision !== last) count++;
    last = e.kv.mod_revision;
  }
  return count;
}

export interface WatchStreamOptions {
  /** After creation with history to replay and nothing heard, assume the replay held no events (etcd syncs every 100 ms). */
  readonly replayQuietMs?: number;
  readonly reconnectMs?: number;
}

export class EtcdWatchStream {
  readonly #client: EtcdClient;
  readonly #logger: Logger;
  readonly #subs = new Map<number, Sub>();
  readonly #quietMs: number;
  readonly #reconnectMs: number;
  #stream: ClientDuplexStream<unknown, EtcdWatchResponse> | undefined;
  #nextId = 1;
  /** Responses of the current turn of the event loop, handled together in watcher order (see #flush). */
  #pending: EtcdWatchResponse[] = [];
  #reconnect: NodeJS.Timeout | undefined;
  /** Streams broken in a row without a response: the reconnect delay doubles with each, up to 5 s. */
  #failures = 0;
  /** Highest revision the synced ticker has passed: progress a watcher gets once its pending writes are delivered. */
  #tickedTo = 0;
  #closed = false;

  constructor(client: EtcdClient, logger: Logger, options: WatchStreamOptions = {}) {
    this.#client = client;
    this.#logger = logger;
    this.#quietMs = options.replayQuietMs ?? 1000;
    this.#reconnectMs = options.reconnectMs ?? 250;
  }

  /** Whether a stream is open (not between a break and its reconnect). */
  get connected(): boolean {
    return this.#stream !== undefined;
  }

  add(target: WatchTarget): () => void {
    const sub: Sub = { id: this.#nextId++, target, cursor: target.after, reported: 0, pending: [], createdAt: 0, synced: false, assumed: false, quiet: undefined, cancelled: false };
    this.#subs.set(sub.id, sub);
    if (this.#stream) this.#create(sub);
    else if (!this.#reconnect) this.#connect();
    return () => this.#cancel(sub);
  }

  /**
   * A write the ticker saw, in its (complete, ordered) stream. A write in a watcher's range that the watcher has not
   * delivered yet is noted as pending for it. Once the ticker is synced (`proven`), a write outside a synced
   * watcher's range is reported to it as progress, up to just before its first pending write. Only reported: should an
   * event of the range at or below it still come, #receive ends the watch (GONE).
   */
  tick(revision: number, key: string, proven = true): void {
    if (proven) this.#tickedTo = Math.max(this.#tickedTo, revision);
    for (const sub of this.#subs.values()) {
      if (key >= sub.target.key && key < sub.target.end) {
        if (revision > sub.cursor && (sub.pending.at(-1) ?? 0) < revision) sub.pending.push(revision);
        continue;
      }
      if (proven && (sub.synced || sub.assumed)) this.#report(sub, this.#bound(sub, revision), sub.synced);
    }
  }

  /** Progress that may be reported to `sub`: `revision`, but not at or past a write of its range still to come. */
  #bound(sub: Sub, revision: number): number {
    const first = sub.pending[0];
    return first === undefined ? revision : Math.min(revision, first - 1);
  }

  close(err: Error): void {
    this.#closed = true;
    clearTimeout(this.#reconnect);
    for (const sub of [...this.#subs.values()]) this.#fail(sub, err);
    this.#stream?.cancel();
    this.#stream = undefined;
  }

  #connect(): void {
    this.#reconnect = undefined;
    if (this.#closed || this.#subs.size === 0) return;
    const { stream, url } = this.#client.openWatch();
    this.#stream = stream;
    let broken = false;
    const onBroken = (err: Error) => {
      if (broken || this.#stream !== stream) return;
      broken = true;
      this.#stream = undefined;
      stream.cancel();
      if (this.#closed) return;
      this.#logger.warn({ err: err.message, endpoint: url }, "etcd watch stream broken; watching again from the last seen revision");
      this.#client.failedOver(url);
      for (const sub of this.#subs.values()) {
        clearTimeout(sub.quiet);
        sub.synced = sub.assumed = false;
      }
      this.#reconnect = setTimeout(() => this.#connect(), Math.min(5000, this.#reconnectMs * 2 ** this.#failures++));
    };
    stream.on("data", (res: EtcdWatchResponse) => this.#queue(res));
    stream.on("error", (err: Error) => onBroken(err));
    stream.on("end", () => onBroken(new Error("watch stream ended")));
    for (const sub of this.#subs.values()) this.#create(sub);
  }

  #create(sub: Sub): void {
    const t = sub.target;
    this.#stream!.write({
      create_request: { key: Buffer.from(t.key), range_end: Buffer.from(t.end), start_revision: sub.cursor + 1, progress_notify: true, prev_kv: true, watch_id: sub.id },
    });
  }

  #queue(res: EtcdWatchResponse): void {
    this.#failures = 0;
    if (this.#pending.push(res) === 1) setImmediate(() => this.#flush());
  }

  /**
   * etcd orders one stream's responses by revision but not the watchers within one revision. Handling a turn's
   * responses in watcher order gives every watcher of one store the same order (the contract's "a watcher that writes
   * from its callback sees its own write first"), and the ticker last, so its progress never overtakes an event.
   */
  #flush(): void {
    const batch = this.#pending;
    this.#pending = [];
    const rank = (res: EtcdWatchResponse) => (this.#subs.get(res.watch_id)?.target.last ? Infinity : res.watch_id);
    const ordered = batch.map((res, i) => [res, i] as const).sort(([a, i], [b, j]) => rank(a) - rank(b) || i - j);
    for (const [res] of ordered) this.#receive(res);
  }

  #receive(res: EtcdWatchResponse): void {
    const sub = this.#subs.get(res.watch_id);
    if (!sub || sub.cancelled) return;
    const revision = res.header.revision;
    if (res.canceled) {
      const err = res.compact_revision > 0
        ? new PlatformError("GONE", `revision ${sub.cursor} has been compacted; the oldest available revision is ${res.compact_revision}`, { details: { revision: sub.cursor, compactedRevision: res.compact_revision } })
        : new PlatformError("STORAGE_UNAVAILABLE", `etcd cancelled the watch: ${res.cancel_reason || "no reason given"}`);
      this.#fail(sub, err);
      return;
    }
    if (res.created) {
      sub.createdAt = revision;
      // Nothing to replay: the watcher is synced from its creation on.
      if (sub.cursor >= revision) this.#synced(sub, revision);
      else this.#waitQuiet(sub);
      return;
    }
    const events = res.events.filter((e) => e.kv.mod_revision > sub.cursor);
    if (events.length > 0 && events[0]!.kv.mod_revision <= sub.reported) {
      // An event after progress past it was reported (assumed, see #assume, or the ticker's): delivering it now would
      // contradict that report, so the watcher ends and its owner lists again (a watch cache relists), rather than
      // apply events backwards or drop them.
      this.#fail(sub, new PlatformError("GONE", `etcd sent revision ${events[0]!.kv.mod_revision} after the watch had reported progress up to ${sub.reported}; list again`, { details: { revision: sub.cursor } }));
      return;
    }
    if (events.length > 0) {
      sub.cursor = events.at(-1)!.kv.mod_revision;
      const synced = sub.synced;
      this.#call(sub, () => sub.target.onEvents(events, synced));
      this.#delivered(sub);
      // etcd replays history in batches of WATCH_BATCH_MAX_REVS revisions; a full batch may have more behind it, so
      // only a shorter one that reaches the creation revision proves the replay done.
      if (!sub.synced && sub.cursor >= sub.createdAt && distinctRevisions(res.events) < WATCH_BATCH_MAX_REVS) this.#synced(sub, sub.cursor);
      // A replay still arriving is not quiet: the quiet period starts again after each of its batches.
      else if (!sub.synced && !sub.assumed && !sub.cancelled) this.#waitQuiet(sub);
    } else if (res.events.length === 0 && revision > sub.cursor) {
      // A progress notification: etcd sends it only to a synced watcher with nothing pending.
      this.#synced(sub, revision);
    }
  }

  #synced(sub: Sub, revision: number): void {
    clearTimeout(sub.quiet);
    sub.quiet = undefined;
    if (sub.cancelled) return;
    sub.synced = true;
    sub.assumed = false;
    sub.cursor = Math.max(sub.cursor, revision);
    this.#report(sub, sub.cursor, true);
    this.#delivered(sub);
  }

  /** The watcher's cursor moved: its pending writes up to it are delivered, and the ticker's progress may follow. */
  #delivered(sub: Sub): void {
    let done = 0;
    while (done < sub.pending.length && sub.pending[done]! <= sub.cursor) done++;
    if (done > 0) sub.pending.splice(0, done);
    if (sub.cancelled || !(sub.synced || sub.assumed)) return;
    // Only progress past its own events: those told the watcher their revisions already.
    const progress = this.#bound(sub, this.#tickedTo);
    if (progress > sub.cursor) this.#report(sub, progress, sub.synced);
  }

  #waitQuiet(sub: Sub): void {
    clearTimeout(sub.quiet);
    sub.quiet = setTimeout(() => this.#assume(sub), this.#quietMs);
  }

  /**
   * No event and no progress notification within the quiet period after creation or the replay's last batch: etcd
   * replays history every 100 ms, so the replay most likely held nothing more for this range (etcd 3.4 cannot be asked). Progress is reported so a
   * cache becomes ready, but the cursor stays: should history still arrive, the watch ends with GONE (list again)
   * instead of skipping it.
   */
  #assume(sub: Sub): void {
    sub.quiet = undefined;
    if (sub.cancelled || sub.synced) return;
    sub.assumed = true;
    this.#report(sub, sub.createdAt, false);
  }

  #report(sub: Sub, revision: number, proven: boolean): void {
    if (revision <= sub.reported) return;
    sub.reported = revision;
    this.#call(sub, () => sub.target.onProgress(revision, proven));
  }

  #call(sub: Sub, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#logger.warn({ err, key: sub.target.key }, "storage watcher failed; cancelling it");
      this.#fail(sub, toPlatformError(err));
    }
  }

  #fail(sub: Sub, err: Error): void {
    if (sub.cancelled) return;
    this.#cancel(sub);
    sub.target.onError(err);
  }

  #cancel(sub: Sub): void {
    if (sub.cancelled) return;
    sub.cancelled = true;
    clearTimeout(sub.quiet);
    this.#subs.delete(sub.id);
    if (this.#stream && !this.#closed) this.#stream.write({ cancel_request: { watch_id: sub.id } });
  }
}

// When the embedded backends delete keys written with a time to live: a min-heap of (time, key, revision), checked
// lazily — an entry whose key was written again (or deleted) since is dropped when it comes due, so a write costs
// O(log n) and nothing is ever searched for; once such entries outnumber the live ones the heap is rebuilt without
// them, so it holds what is stored, not every write of the last time-to-live.
import { isPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { CancelTimer, Clock } from "../../time/clock.js";

/** One write with a time to live: its key expires at `at` (ms) if `rev` is still the key's last write then. */
export interface Expiring {
  readonly at: number;
  readonly key: string;
  readonly rev: number;
}

/** How often at most the due keys are looked for (etcd checks its leases every 500 ms). */
const SWEEP_MS = 500;
/** Entries beyond twice the live ones (and this many) that make the queue drop its stale entries. */
const STALE_SLACK = 1024;

/**
 * Keys deleted per sweep: a backlog (a burst's Events, or those due during a long stop) goes in batches of this many,
 * each sweep starting when the one before is committed, so other writes interleave.
 */
const PER_SWEEP = 1000;

export class ExpiryQueue {
  readonly #heap: Expiring[] = [];

  get size(): number {
    return this.#heap.length;
  }

  /** The earliest time in the queue. */
  next(): number | undefined {
    return this.#heap[0]?.at;
  }

  add(entry: Expiring): void {
    const h = this.#heap;
    h.push(entry);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.at <= h[i]!.at) break;
      [h[parent], h[i]] = [h[i]!, h[parent]!];
      i = parent;
    }
  }

  /** Removes and returns the entries due at `now`, earliest first, at most `max`. */
  takeDue(now: number, max: number): Expiring[] {
    const out: Expiring[] = [];
    while (out.length < max && this.#heap.length > 0 && this.#heap[0]!.at <= now) out.push(this.#pop());
    return out;
  }

  clear(): void {
    this.#heap.length = 0;
  }

  /** Keeps only the entries `live` accepts, in heap order again (sorted: O(n log n) for what is kept). */
  retain(live: (entry: Expiring) => boolean): void {
    const kept = this.#heap.filter(live);
    this.#heap.length = 0;
    for (const entry of kept.sort((a, b) => a.at - b.at)) this.#heap.push(entry);
  }

  #pop(): Expiring {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && h[l]!.at < h[m]!.at) m = l;
        if (r < h.length && h[r]!.at < h[m]!.at) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return top;
  }
}

/**
 * Deletes the keys of a backend as their time comes: a timer armed for the earliest entry (no sooner than
 * SWEEP_MS after the last sweep, unless that one left a backlog), each due key deleted with its revision as the precondition, so a key written
 * again meanwhile stays (CONFLICT) and one already deleted is skipped (NOT_FOUND).
 */
export class Expirer {
  readonly #queue = new ExpiryQueue();
  /** Each key's expiry as last written (what a write that keeps it carries over). */
  readonly #at = new Map<string, number>();
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #remove: (key: string, rev: number) => Promise<unknown>;
  #timer: CancelTimer | undefined;
  #timerAt = Infinity;
  #lastSweep = -Infinity;
  #closed = false;

  constructor(clock: Clock, logger: Logger, remove: (key: string, rev: number) => Promise<unknown>) {
    this.#clock = clock;
    this.#logger = logger;
    this.#remove = remove;
  }

  /** Entries waiting (superseded ones included until they come due). */
  get pending(): number {
    return this.#queue.size;
  }

  add(entry: Expiring): void {
    if (this.#closed) return;
    this.#queue.add(entry);
    this.#at.set(entry.key, entry.at);
    // Deleted keys and earlier writes of a key written again: rebuilt away once they are most of the queue, so a
    // rebuild (a filter and a sort) is paid at most once per n/2 writes.
    if (this.#queue.size > 2 * this.#at.size + STALE_SLACK) this.#queue.retain((e) => this.#live(e));
    this.#arm();
  }

  /** The key was written without a time to live, or deleted: it no longer expires. */
  forget(key: string): void {
    if (this.#at.size > 0) this.#at.delete(key);
  }

  /** When the key expires, if it was last written with a time to live. */
  expiryOf(key: string): number | undefined {
    return this.#at.get(key);
  }

  /**
   * Whether `entry` may still expire its key: the key expires (it was not deleted or written without a time to live)
   * and not after the entry's time. A write of the key since has a later time (the time to live is the server's); a
   * failed delete's retry a later one too; one that kept the key's expiry the same (harmless: the earlier revision's
   * delete meets CONFLICT).
   */
  #live(entry: Expiring): boolean {
    const at = this.#at.get(entry.key);
    return at !== undefined && entry.at >= at;
  }

  close(): void {
    this.#closed = true;
    this.#timer?.();
    this.#timer = undefined;
    this.#queue.clear();
    this.#at.clear();
  }

  /** `backlog`: the last sweep stopped at PER_SWEEP with more due, so the next one follows at once. */
  #arm(backlog = false): void {
    const next = this.#queue.next();
    if (next === undefined || this.#closed) return;
    const at = Math.max(next, this.#lastSweep + (backlog ? 0 : SWEEP_MS));
    if (at >= this.#timerAt) return;
    this.#timer?.();
    this.#timerAt = at;
    this.#timer = this.#clock.setTimer(at - this.#clock.now(), () => void this.#sweep());
  }

  async #sweep(): Promise<void> {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    this.#lastSweep = now;
    const due = this.#queue.takeDue(now, PER_SWEEP);
    await Promise.all(due.map((e) => this.#expire(e)));
    this.#arm(due.length === PER_SWEEP);
  }

  async #expire(entry: Expiring): Promise<void> {
    try {
      await this.#remove(entry.key, entry.rev);
    } catch (err) {
      if (isPlatformError(err, "CONFLICT") || isPlatformError(err, "NOT_FOUND") || this.#closed) return;
      // The store could not write (disk full, a failed flush): the key is deleted at a later sweep.
      this.#logger.warn({ err, key: entry.key }, "an expired key could not be deleted; trying again");
      this.#queue.add({ ...entry, at: this.#clock.now() + 10 * SWEEP_MS });
    }
  }
}

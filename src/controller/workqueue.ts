// The controller work queue: deduplicated string keys, one worker per key at a time, delayed and rate-limited adds.
import { systemClock, type CancelTimer, type Clock } from "../time/clock.js";
import { ItemExponentialBackoff, type KeyBackoff } from "../time/backoff.js";

/** Optional observers, for wiring prom-client gauges and histograms. */
export interface WorkQueueMetrics {
  depth?(name: string, depth: number): void;
  add?(name: string, key: string): void;
  retry?(name: string, key: string): void;
  /** Milliseconds from the key being queued to a worker taking it. */
  queueLatency?(name: string, ms: number): void;
  /** Milliseconds from `get` to `done`. */
  workDuration?(name: string, ms: number): void;
}

export interface WorkQueueOptions {
  /** Names the queue in metrics and logs. */
  readonly name?: string;
  readonly clock?: Clock;
  readonly backoff?: KeyBackoff;
  readonly metrics?: WorkQueueMetrics;
}

interface Waiter {
  readonly resolve: (key: string | undefined) => void;
  readonly signal?: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * Keys wait in FIFO order. A key is queued at most once (`dirty`); a key being processed is not handed out
 * again until `done(key)`, and an add during processing re-queues it at that point. After `shutDown()` adds
 * are ignored and `get` hands out what is left, then resolves `undefined`.
 */
export class WorkQueue {
  readonly name: string;
  private readonly clock: Clock;
  private readonly backoff: KeyBackoff;
  private readonly metrics: WorkQueueMetrics;
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Map<string, number>();
  private readonly queuedAt = new Map<string, number>();
  private readonly delayed = new Map<string, { due: number; cancel: CancelTimer }>();
  private readonly waiters: Waiter[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.name = options.name ?? "queue";
    this.clock = options.clock ?? systemClock;
    this.backoff = options.backoff ?? new ItemExponentialBackoff();
    this.metrics = options.metrics ?? {};
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.metrics.add?.(this.name, key);
    this.dirty.add(key);
    this.queuedAt.set(key, this.clock.now());
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds `key` after `ms`; a key already waiting keeps the earlier of the two times. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const due = this.clock.now() + ms;
    const waiting = this.delayed.get(key);
    if (waiting && waiting.due <= due) return;
    waiting?.cancel();
    const cancel = this.clock.setTimer(ms, () => {
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { due, cancel });
  }

  /** Re-adds `key` after its per-key backoff (each call doubles it until `forget`). */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.metrics.retry?.(this.name, key);
    this.addAfter(key, this.backoff.when(key));
  }

  forget(key: string): void {
    this.backoff.forget(key);
  }

  numRequeues(key: string): number {
    return this.backoff.numRequeues(key);
  }

  /** The next key, waiting for one; `undefined` once shut down and drained, or when `signal` aborts. */
  get(signal?: AbortSignal): Promise<string | undefined> {
    if (this.queue.length > 0) return Promise.resolve(this.take(this.queue.shift()!));
    if (this.shuttingDown || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve(undefined);
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * The next key when one is waiting now and `accept` takes it, else undefined (the key stays first in line); taken as
   * get() takes it (finish it with done()).
   */
  tryGet(accept: (key: string) => boolean = () => true): string | undefined {
    return this.queue.length > 0 && accept(this.queue[0]!) ? this.take(this.queue.shift()!) : undefined;
  }

  /** Marks `key` finished; a key added meanwhile goes back into the queue now. */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics.workDuration?.(this.name, this.clock.now() - started);
    // A key added before shutDown while it was in process still counts as queued work to drain.
    if (this.dirty.has(key)) this.push(key);
    if (this.processing.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Keys waiting (not counting delayed or in-process keys). */
  len(): number {
    return this.queue.length;
  }

  /** Keys handed out and not yet `done`. */
  inProcess(): string[] {
    return [...this.processing.keys()];
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops accepting keys and drops delayed ones; workers still drain what is queued. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { cancel } of this.delayed.values()) cancel();
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) {
      w.signal?.removeEventListener("abort", w.onAbort);
      w.resolve(undefined);
    }
  }

  /** `shutDown()`, then waits until the queue is empty and nothing is in process. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    while (this.queue.length > 0 || this.processing.size > 0) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(this.take(key));
      return;
    }
    this.queue.push(key);
    this.metrics.depth?.(this.name, this.queue.length);
  }

  private take(key: string): string {
    const now = this.clock.now();
    this.dirty.delete(key);
    this.processing.set(key, now);
    const queued = this.queuedAt.get(key);
    this.queuedAt.delete(key);
    if (queued !== undefined) this.metrics.queueLatency?.(this.name, now - queued);
    this.metrics.depth?.(this.name, this.queue.length);
    return key;
  }
}

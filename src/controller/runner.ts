// Runs a controller's workers: keys from the work queue into sync(key), retrying failures with per-key backoff.
import { setMaxListeners } from "node:events";
import type { ApiObject } from "../api/meta.js";
import { invalidOption, isPlatformError, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { systemClock, type Clock } from "../time/clock.js";
import { objectKey, type InformerHandlers } from "./informer.js";
import type { WorkQueue } from "./workqueue.js";

/** A sync function: re-reads the object by key, does the work, throws to be retried. */
export type SyncFn = (key: string, signal: AbortSignal) => Promise<void>;

const terminal = new WeakSet<object>();

/**
 * Marks an error as terminal: the runner logs it and forgets the key instead of retrying. For problems no
 * retry can fix (the object itself is wrong), after the sync has recorded them on the object.
 */
export function markTerminal<E extends object>(error: E): E {
  terminal.add(error);
  return error;
}

export function isTerminal(error: unknown): boolean {
  return typeof error === "object" && error !== null && terminal.has(error);
}

export interface RunnerOptions {
  /** Names the controller in logs. */
  readonly name: string;
  readonly queue: WorkQueue;
  readonly sync: SyncFn;
  /** Concurrent workers (default 1). */
  readonly workers?: number;
  /** How long `stop()` waits for syncs in flight before aborting their signal (default 30 s). */
  readonly stopTimeoutMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

export interface RunnerStopResult {
  /** Keys whose sync had not finished when the stop deadline passed. */
  readonly abandoned: string[];
}

export class Runner {
  readonly name: string;
  private readonly queue: WorkQueue;
  private readonly syncFn: SyncFn;
  private readonly workers: number;
  private readonly stopTimeoutMs: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly taking = new AbortController();
  private readonly syncing = new AbortController();
  private readonly inFlight = new Set<string>();
  private loops: Promise<void>[] = [];
  private stopping: Promise<RunnerStopResult> | undefined;

  constructor(options: RunnerOptions) {
    if (!options.name) throw invalidOption("name", "to be a non-empty string", options.name);
    const workers = options.workers ?? 1;
    if (!Number.isSafeInteger(workers) || workers < 1) throw invalidOption("workers", "to be a whole number ≥ 1", options.workers);
    const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
    if (!(stopTimeoutMs >= 0)) throw invalidOption("stopTimeoutMs", "≥ 0", options.stopTimeoutMs);
    this.name = options.name;
    this.queue = options.queue;
    this.syncFn = options.sync;
    this.workers = workers;
    this.stopTimeoutMs = stopTimeoutMs;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ controller: options.name });
    // Every worker waits on `taking` and every sync's requests listen on `syncing`: many listeners on one signal are
    // the design here, not a leak (as the manager's own signals).
    setMaxListeners(0, this.taking.signal, this.syncing.signal);
  }

  /** Starts the workers; aborting `signal` is the same as `stop()`. */
  start(signal?: AbortSignal): void {
    if (this.loops.length > 0) throw new PlatformError("INVALID_ARGUMENT", `runner ${this.name} is already started`);
    for (let i = 0; i < this.workers; i++) this.loops.push(this.work());
    if (signal?.aborted) void this.stop();
    else signal?.addEventListener("abort", () => void this.stop(), { once: true });
  }

  /** Keys being synced right now. */
  active(): string[] {
    return [...this.inFlight];
  }

  /** Stops taking keys, waits for syncs in flight up to the deadline (then aborts their signal), shuts the queue down. */
  stop(): Promise<RunnerStopResult> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<RunnerStopResult> {
    this.taking.abort();
    let timedOut = false;
    const finished = Promise.all(this.loops).then(() => "finished" as const);
    let cancel = (): void => {};
    const deadline = new Promise<"deadline">((resolve) => {
      cancel = this.clock.setTimer(this.stopTimeoutMs, () => resolve("deadline"));
    });
    timedOut = (await Promise.race([finished, deadline])) === "deadline";
    cancel();
    const abandoned = timedOut ? [...this.inFlight] : [];
    if (timedOut) {
      this.log.warn({ keys: abandoned, stopTimeoutMs: this.stopTimeoutMs }, "syncs still running at the stop deadline; aborting them");
      this.syncing.abort();
    }
    this.queue.shutDown();
    return { abandoned };
  }

  private async work(): Promise<void> {
    while (!this.taking.signal.aborted) {
      const key = await this.queue.get(this.taking.signal);
      if (key === undefined) return;
      this.inFlight.add(key);
      try {
        await this.syncFn(key, this.syncing.signal);
        this.queue.forget(key);
      } catch (err) {
        this.failed(key, err);
      } finally {
        this.inFlight.delete(key);
        this.queue.done(key);
      }
    }
  }

  private failed(key: string, err: unknown): void {
    const detail = isPlatformError(err) ? { code: err.code, message: err.message } : { message: err instanceof Error ? err.message : String(err) };
    if (isTerminal(err)) {
      this.queue.forget(key);
      this.log.warn({ key, err: detail }, "sync failed for good; not retrying");
      return;
    }
    this.log.info({ key, err: detail, retries: this.queue.numRequeues(key) }, "sync failed; retrying with backoff");
    this.queue.addRateLimited(key);
  }
}

export interface EnqueueOptions<T extends ApiObject> {
  /** Only objects passing the filter are queued. */
  readonly filter?: (obj: T) => boolean;
  /** The queue key of an object (default `objectKey`: `namespace/name` or `name`). */
  readonly key?: (obj: T) => string;
  /** Queue deletions too (default true; a sync then finds the object gone from the cache). */
  readonly deletes?: boolean;
}

/** Informer handlers that queue the key of every added, updated and deleted object. */
export function enqueueHandlers<T extends ApiObject>(queue: WorkQueue, options: EnqueueOptions<T> = {}): InformerHandlers<T> {
  const keyOf = options.key ?? objectKey;
  const enqueue = (obj: T): void => {
    if (!options.filter || options.filter(obj)) queue.add(keyOf(obj));
  };
  return {
    onAdd: (obj) => enqueue(obj),
    onUpdate: (_old, obj) => enqueue(obj),
    onDelete: options.deletes === false ? undefined : (obj) => enqueue(obj),
  };
}

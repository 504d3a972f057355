// The one controller core: informer handlers feed a work queue, workers take keys into sync(key), failures retry with backoff.
import { setMaxListeners } from "node:events";
import { invalidOption, isPlatformError, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { KeyBackoff } from "../time/backoff.js";
import { systemClock, type Clock } from "../time/clock.js";
import type { ControllerMetrics } from "./metrics.js";
import { WorkQueue } from "./workqueue.js";
import { defaultTracer, type Tracer } from "../tracing/tracer.js";

/** The part of an informer a controller waits on. */
export interface SyncedSource {
  waitForSync(signal?: AbortSignal): Promise<boolean>;
  hasSynced(): boolean;
}

export interface ControllerOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly metrics?: ControllerMetrics;
  /** Concurrent syncs (default 1). */
  readonly workers?: number;
  /** How long stop() lets syncs in flight finish before aborting their signal (default 30 s). */
  readonly stopTimeoutMs?: number;
  /** A span per sync (default the process's tracer: a no-op unless `--tracing-config-file` was given). */
  readonly tracer?: Tracer;
}

export interface ControllerStopResult {
  /** Keys whose sync had not finished when the stop deadline passed. */
  readonly abandoned: string[];
}

/**
 * A controller is its handler: `subscribe` adds the informer handlers that queue keys, `sync(key)` re-reads the
 * object from the cache and does the work. Everything between (queue, workers, retries, start and stop) is here.
 */
export abstract class Controller {
  readonly name: string;
  protected readonly queue: WorkQueue;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  protected readonly metrics: ControllerMetrics | undefined;
  protected readonly tracer: Tracer;
  private readonly sources: readonly SyncedSource[];
  private readonly workers: number;
  private readonly stopTimeoutMs: number;
  /** Every worker waits on `taking` and every sync's requests listen on `syncing`. */
  private readonly taking = new AbortController();
  private readonly syncing = new AbortController();
  private readonly inFlight = new Set<string>();
  private unsubscribe: (() => void)[] = [];
  private loops: Promise<void>[] = [];
  private running = false;
  private stopping: Promise<ControllerStopResult> | undefined;

  protected constructor(name: string, sources: readonly SyncedSource[], options: ControllerOptions, backoff?: KeyBackoff) {
    if (!name) throw invalidOption("name", "to be a non-empty string", name);
    const workers = options.workers ?? 1;
    if (!Number.isSafeInteger(workers) || workers < 1) throw invalidOption("workers", "to be a whole number ≥ 1", options.workers);
    const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
    if (!(stopTimeoutMs >= 0)) throw invalidOption("stopTimeoutMs", "≥ 0", options.stopTimeoutMs);
    this.name = name;
    this.sources = sources;
    this.workers = workers;
    this.stopTimeoutMs = stopTimeoutMs;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ controller: name });
    this.metrics = options.metrics;
    this.tracer = options.tracer ?? defaultTracer();
    this.queue = new WorkQueue({ name, clock: this.clock, ...(backoff && { backoff }), ...(options.metrics && { metrics: options.metrics.workQueue() }) });
    // Many listeners on these two signals are the design (one per worker, one per request in flight), not a leak.
    setMaxListeners(0, this.taking.signal, this.syncing.signal);
  }

  /** Re-reads the object of `key` from the cache and does what it needs; throwing means retry with backoff. */
  protected abstract sync(key: string, signal: AbortSignal): Promise<void>;

  /** Adds the informer handlers that feed the queue; returns their removers. */
  protected abstract subscribe(): (() => void)[];

  /** Runs after the caches synced, before the workers start (initial keys, timers). */
  protected onSynced(): void {}

  /** Runs `fn` now and then every `ms` of the controller's clock until it stops. */
  protected repeat(ms: number, fn: () => void): void {
    let cancel = (): void => {};
    const tick = (): void => {
      fn();
      cancel = this.clock.setTimer(ms, tick);
    };
    this.unsubscribe.push(() => cancel());
    tick();
  }

  /** Subscribes, waits for the caches it reads, then starts its workers; aborting `signal` stops it. */
  async start(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    if (this.loops.length > 0) throw new PlatformError("INVALID_ARGUMENT", `controller ${this.name} is already started`);
    this.unsubscribe = this.subscribe();
    signal.addEventListener("abort", () => void this.stop(), { once: true });
    const synced = await Promise.all(this.sources.map((s) => s.waitForSync(signal)));
    if (signal.aborted || synced.includes(false)) return;
    this.onSynced();
    for (let i = 0; i < this.workers; i++) this.loops.push(this.work());
    this.running = true;
    this.log.info("started");
  }

  /** Stops taking keys, waits for syncs in flight up to the stop timeout (then aborts their signal), shuts the queue down. */
  stop(): Promise<ControllerStopResult> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  /** Keys being synced right now (with those a sync took beside its own). */
  active(): string[] {
    return [...this.inFlight];
  }

  /** Keys waiting in the work queue for a worker (not those being synced). */
  backlog(): number {
    return this.queue.len();
  }

  /**
   * Up to `n` more keys waiting in the queue now (none once stopping), in order while `accept` takes them, taken as a
   * worker takes them: for a sync that does the work of several keys at once. The caller owns each until it passes
   * it to finish().
   */
  protected takeWaiting(n: number, accept?: (key: string) => boolean): string[] {
    const keys: string[] = [];
    while (keys.length < n && !this.taking.signal.aborted) {
      const key = this.queue.tryGet(accept);
      if (key === undefined) break;
      this.inFlight.add(key);
      keys.push(key);
    }
    return keys;
  }

  /** Ends the work of a key: forgotten when it succeeded, retried with backoff when `err` says it failed. */
  protected finish(key: string, failed: { readonly err: unknown } | undefined): void {
    if (failed === undefined) this.queue.forget(key);
    else {
      const err = failed.err;
      const detail = isPlatformError(err) ? { code: err.code, message: err.message } : { message: err instanceof Error ? err.message : String(err) };
      this.log.info({ key, err: detail, retries: this.queue.numRequeues(key) }, "sync failed; retrying with backoff");
      this.queue.addRateLimited(key);
    }
    this.inFlight.delete(key);
    this.queue.done(key);
  }

  /** Caches synced and workers running. */
  ready(): boolean {
    return this.running && this.sources.every((s) => s.hasSynced());
  }

  private async shutdown(): Promise<ControllerStopResult> {
    for (const off of this.unsubscribe.splice(0)) off();
    this.running = false;
    this.taking.abort();
    const finished = Promise.all(this.loops).then(() => "finished" as const);
    let cancel = (): void => {};
    const deadline = new Promise<"deadline">((resolve) => {
      cancel = this.clock.setTimer(this.stopTimeoutMs, () => resolve("deadline"));
    });
    const timedOut = (await Promise.race([finished, deadline])) === "deadline";
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
      let failed: { readonly err: unknown } | undefined;
      try {
        await this.tracer.inSpan(`${this.name} sync`, { key }, () => this.sync(key, this.syncing.signal));
      } catch (err) {
        failed = { err };
      }
      this.finish(key, failed);
    }
  }
}

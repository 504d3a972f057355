// What every controller of the manager shares: informer subscriptions feeding a work queue, workers, start/stop.
import { silentLogger, type Logger } from "../../logger.js";
import type { KeyBackoff } from "../../time/backoff.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { Runner } from "../runner.js";
import { WorkQueue } from "../workqueue.js";
import type { ControllerMetrics } from "../metrics.js";

/** A controller as the manager runs it. */
export interface Controller {
  readonly name: string;
  /** Subscribes, waits for the caches it reads, then starts its workers; aborting `signal` stops it. */
  start(signal: AbortSignal): Promise<void>;
  /** Stops taking keys and waits for syncs in flight (up to the stop timeout). */
  stop(): Promise<void>;
  /** Caches synced and workers running. */
  ready(): boolean;
  /** Keys waiting in the work queue for a worker (not those being synced). */
  backlog(): number;
}

/** The part of an informer a controller waits on. */
export interface SyncedSource {
  waitForSync(signal?: AbortSignal): Promise<boolean>;
  hasSynced(): boolean;
}

export interface QueueControllerOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly metrics?: ControllerMetrics;
  /** Concurrent syncs (default 1). */
  readonly workers?: number;
  /** How long stop() lets syncs in flight finish before aborting them (default 30 s). */
  readonly stopTimeoutMs?: number;
}

export abstract class QueueController implements Controller {
  readonly name: string;
  protected readonly queue: WorkQueue;
  protected readonly clock: Clock;
  protected readonly log: Logger;
  protected readonly metrics: ControllerMetrics | undefined;
  private readonly runner: Runner;
  private readonly sources: readonly SyncedSource[];
  private unsubscribe: (() => void)[] = [];
  private running = false;

  protected constructor(name: string, sources: readonly SyncedSource[], options: QueueControllerOptions, rateLimiter?: KeyBackoff) {
    this.name = name;
    this.sources = sources;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ controller: name });
    this.metrics = options.metrics;
    this.queue = new WorkQueue({ name, clock: this.clock, ...(rateLimiter && { rateLimiter }), ...(options.metrics && { metrics: options.metrics.workQueue() }) });
    this.runner = new Runner({
      name,
      queue: this.queue,
      sync: (key, signal) => this.sync(key, signal),
      workers: options.workers ?? 1,
      stopTimeoutMs: options.stopTimeoutMs ?? 30_000,
      clock: this.clock,
      logger: options.logger ?? silentLogger(),
    });
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

  async start(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.unsubscribe = this.subscribe();
    signal.addEventListener("abort", () => void this.stop(), { once: true });
    const synced = await Promise.all(this.sources.map((s) => s.waitForSync(signal)));
    if (signal.aborted || synced.includes(false)) return;
    this.onSynced();
    this.runner.start(signal);
    this.running = true;
    this.log.info("started");
  }

  async stop(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    this.running = false;
    const { abandoned } = await this.runner.stop();
    if (abandoned.length > 0) this.log.warn({ abandoned }, "stopped with syncs abandoned");
  }

  backlog(): number {
    return this.queue.len();
  }

  ready(): boolean {
    return this.running && this.sources.every((s) => s.hasSynced());
  }
}

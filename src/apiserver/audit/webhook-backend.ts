// The audit webhook backend: events POSTed as EventList batches, buffered (batch mode, bounded: a full buffer drops and
// counts, never blocks) or sent while the request waits (blocking, blocking-strict), as upstream's webhook plugin.
import { setMaxListeners } from "node:events";
import { PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { AuditErrorReporter, AuditSink } from "../../audit/log-backend.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import { TokenBucket } from "../../time/token-bucket.js";

export const AUDIT_WEBHOOK_MODES = ["batch", "blocking", "blocking-strict"] as const;
export type AuditWebhookMode = (typeof AUDIT_WEBHOOK_MODES)[number];

/** Upstream's batch settings (`--audit-webhook-batch-*`), with its defaults in DEFAULT_AUDIT_BATCH. */
export interface AuditBatchSettings {
  /** Events held before new ones are dropped. */
  readonly bufferSize: number;
  readonly maxBatchSize: number;
  /** A batch smaller than maxBatchSize leaves at the latest this long after the previous one. */
  readonly maxBatchWaitMs: number;
  /** Batches per second (and the burst above it); undefined: not throttled. */
  readonly throttle?: { readonly qps: number; readonly burst: number };
}

export const DEFAULT_AUDIT_BATCH: AuditBatchSettings = Object.freeze({ bufferSize: 10_000, maxBatchSize: 400, maxBatchWaitMs: 30_000, throttle: Object.freeze({ qps: 10, burst: 15 }) });

/**
 * Batches being delivered at once. Upstream starts one goroutine per batch without a bound; a bound keeps the memory
 * a slow receiver can pin bounded too: once it is reached, events wait in the buffer, and past its size are dropped.
 */
export const MAX_BATCHES_IN_FLIGHT = 16;
/** How long close() waits by default for the buffer to drain before the undelivered events are counted as lost. */
const CLOSE_GRACE_MS = 5_000;

export interface AuditWebhookOptions {
  /** Sends one EventList (JSON); rejects when the receiver did not take it after its retries. */
  readonly post: (body: string, signal: AbortSignal) => Promise<unknown>;
  /** Called once close() is done (closes the client's connections). */
  readonly release?: () => void;
  readonly mode: AuditWebhookMode;
  /** apiVersion of the EventList (`--audit-webhook-version`). */
  readonly apiVersion: string;
  readonly batch?: AuditBatchSettings;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How long close() waits for deliveries (default 5 s); then they are cancelled and their events counted as lost. */
  readonly closeGraceMs?: number;
}

/** JSON lines (one Event each, as the auditor writes them) as one EventList, without parsing them again. */
export function eventList(lines: readonly string[], apiVersion: string): string {
  return `{"kind":"EventList","apiVersion":${JSON.stringify(apiVersion)},"metadata":{},"items":[${lines.join(",")}]}`;
}

const splitLines = (text: string): string[] => text.split("\n").filter((l) => l !== "");

export class AuditWebhookBackend implements AuditSink {
  readonly plugin = "webhook";
  readonly failsRequest: AuditSink["failsRequest"];
  readonly #o: AuditWebhookOptions;
  readonly #batch: AuditBatchSettings;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #throttle: TokenBucket | undefined;
  readonly #abort = new AbortController();
  #report: AuditErrorReporter = () => undefined;
  #buffer: string[] = [];
  #inFlight = new Set<Promise<void>>();
  #timer: CancelTimer | undefined;
  #sending = false;
  #closed = false;

  constructor(options: AuditWebhookOptions) {
    this.#o = options;
    this.#batch = options.batch ?? DEFAULT_AUDIT_BATCH;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger();
    this.failsRequest = options.mode === "blocking-strict" ? "RequestReceived" : "never";
    const t = this.#batch.throttle;
    this.#throttle = t ? new TokenBucket({ qps: t.qps, burst: t.burst, clock: this.#clock }) : undefined;
    // Every delivery (and each wait between its retries) listens on the one shutdown signal: many at once are expected.
    setMaxListeners(0, this.#abort.signal);
  }

  attach(report: AuditErrorReporter): void {
    this.#report = report;
  }

  /** Events buffered and not yet taken into a batch. */
  get buffered(): number {
    return this.#buffer.length;
  }

  write(lines: string): void | Promise<void> {
    if (this.#o.mode !== "batch") {
      // Blocking modes: the request waits for the receiver (and its retries); the auditor counts a failure.
      return this.#o.post(eventList(splitLines(lines), this.#o.apiVersion), this.#abort.signal).then(() => undefined);
    }
    const events = splitLines(lines);
    if (this.#closed) return this.#lose(events.length, new Error("audit backend shut down"));
    const room = this.#batch.bufferSize - this.#buffer.length;
    // Never waits, never throws: what does not fit is dropped and counted (upstream: "audit buffer queue blocked").
    if (room < events.length) this.#lose(events.length - Math.max(room, 0), new Error("audit buffer queue blocked"), "buffered");
    for (let i = 0; i < Math.min(room, events.length); i++) this.#buffer.push(events[i]!);
    this.#schedule();
  }

  #lose(count: number, err: unknown, plugin = this.plugin): void {
    if (count > 0) this.#report(plugin, count, err);
  }

  /** A full batch leaves at once (throttle and in-flight bound permitting); a partial one after maxBatchWait. */
  #schedule(): void {
    if (this.#buffer.length === 0 || this.#sending) return;
    if (this.#buffer.length >= this.#batch.maxBatchSize || this.#closed) {
      this.#timer?.();
      this.#timer = undefined;
      void this.#sendBatches(false);
    } else {
      this.#timer ??= this.#clock.setTimer(this.#batch.maxBatchWaitMs, () => {
        this.#timer = undefined;
        void this.#sendBatches(true);
      });
    }
  }

  /** Takes full batches off the buffer, and one partial batch when `partial` (maxBatchWait passed); one loop at a time. */
  async #sendBatches(partial: boolean): Promise<void> {
    if (this.#sending) return;
    this.#sending = true;
    try {
      while (this.#buffer.length > 0 && !this.#abort.signal.aborted) {
        if (this.#buffer.length < this.#batch.maxBatchSize && !partial && !this.#closed) break;
        if (this.#inFlight.size >= MAX_BATCHES_IN_FLIGHT) await Promise.race(this.#inFlight);
        if (this.#throttle) await this.#throttle.acquire(this.#abort.signal).catch(() => undefined);
        const batch = this.#buffer.splice(0, this.#batch.maxBatchSize);
        if (batch.length === 0) break;
        const delivery: Promise<void> = this.#o.post(eventList(batch, this.#o.apiVersion), this.#abort.signal).then(
          () => undefined,
          (err: unknown) => {
            this.#logger.error({ err: String((err as Error).message ?? err), events: batch.length }, "audit webhook: a batch could not be delivered; its events are lost");
            this.#lose(batch.length, err);
          },
        ).finally(() => this.#inFlight.delete(delivery));
        this.#inFlight.add(delivery);
        // One partial batch per wait: what arrives after it waits for the next maxBatchWait (or a full batch).
        partial = false;
      }
    } finally {
      this.#sending = false;
    }
    this.#schedule();
  }

  /** Sends what is buffered and waits for deliveries, up to a grace period; what is left then is counted as lost. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#o.mode !== "batch") {
      this.#abort.abort();
      return this.#o.release?.();
    }
    this.#timer?.();
    this.#timer = undefined;
    const drained = (async () => {
      while (this.#buffer.length > 0 || this.#inFlight.size > 0 || this.#sending) {
        if (!this.#sending && this.#buffer.length > 0) void this.#sendBatches(true);
        // A delivery settling, or a moment for the loop taking batches off the buffer (throttled) to go on.
        await Promise.race([...this.#inFlight, systemClock.sleep(10)]);
      }
    })();
    let timeout: CancelTimer | undefined;
    await Promise.race([drained, new Promise<void>((r) => (timeout = systemClock.setTimer(this.#o.closeGraceMs ?? CLOSE_GRACE_MS, r)))]);
    timeout?.();
    if (this.#buffer.length > 0) this.#lose(this.#buffer.length, new PlatformError("NOT_READY", "the server stopped before these events were delivered"));
    this.#buffer = [];
    this.#abort.abort();
    await Promise.allSettled([...this.#inFlight]);
    this.#o.release?.();
  }
}

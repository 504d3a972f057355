// The event recorder's writers: a bounded queue of series drained in batches, paused (nothing lost) on 429.
//
// A few writers at most, so a burst of events does not crowd out the controllers' own writes.
import type { Event } from "../api/types/event.js";
import type { ResourceClient } from "../client/types.js";
import { invalidOption, isPlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import { JitteredBackoff } from "../time/backoff.js";
import { formatMicroTime } from "../api/meta.js";
import type { Clock } from "../time/clock.js";
import { Fifo } from "./event-caches.js";
import type { EventRecorderOptions, EventResult } from "./event-recorder-types.js";

/** Longest pause a server's Retry-After can impose (a larger one is cut to this). */
const MAX_RETRY_AFTER_MS = 60_000;

/** At most one warning of a kind per this period: queue full (with the count dropped since), busy() failing. */
const WARNING_PERIOD_MS = 10_000;

export interface SeriesEntry {
  namespace: string;
  name: string;
  /** The event as first written; its series is the only part that changes. */
  readonly base: Event;
  count: number;
  lastObserved: number;
  created: boolean;
  /** Repeats arrived while it was being written: it goes back in the queue once the write ends. */
  dirty: boolean;
  state: "idle" | "queued" | "writing";
}

/** Names an event anew (`<name>.<hex nanoseconds>`): the recorder keeps the names unique. */
export type EventNamer = (regardingName: string, nowMs: number) => string;

export class EventWriter {
  private readonly client: ResourceClient<Event>;
  private readonly maxInFlight: number;
  private readonly maxInFlightWhileBusy: number;
  private readonly maxQueued: number;
  private readonly queue = new Fifo<SeriesEntry>();
  private inFlight = 0;
  private drained: (() => void)[] = [];
  private droppedSinceWarning = 0;
  private readonly lastWarning = { drop: -Infinity, busy: -Infinity, throttled: -Infinity };
  private readonly batchDelayMs: number;
  /** Writers may start: set when a batch window ends, cleared when the queue and the writers are idle again. */
  private batchOpen = false;
  private batchTimer: ReturnType<typeof setTimeout> | undefined;
  /** No write starts before this time (a 429's Retry-After or backoff). */
  private pausedUntil = -Infinity;
  private cancelResume: (() => void) | undefined;
  private readonly throttle: JitteredBackoff;

  constructor(
    private readonly options: EventRecorderOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly eventName: EventNamer,
  ) {
    this.maxInFlight = options.maxInFlight ?? 4;
    if (!Number.isSafeInteger(this.maxInFlight) || this.maxInFlight < 1) throw invalidOption("maxInFlight", "to be a whole number ≥ 1", options.maxInFlight);
    this.maxInFlightWhileBusy = options.maxInFlightWhileBusy ?? 1;
    if (!Number.isSafeInteger(this.maxInFlightWhileBusy) || this.maxInFlightWhileBusy < 1 || this.maxInFlightWhileBusy > this.maxInFlight) {
      throw invalidOption("maxInFlightWhileBusy", `to be a whole number from 1 to maxInFlight (${this.maxInFlight})`, options.maxInFlightWhileBusy);
    }
    this.batchDelayMs = options.batchDelayMs ?? 0;
    if (!(this.batchDelayMs >= 0 && Number.isFinite(this.batchDelayMs))) throw invalidOption("batchDelayMs", "to be ≥ 0", options.batchDelayMs);
    this.throttle = new JitteredBackoff({ initialMs: 1000, maxMs: 30_000, jitter: 0.5, ...options.throttleBackoff });
    this.maxQueued = options.maxQueued ?? 50_000;
    if (!Number.isSafeInteger(this.maxQueued) || this.maxQueued < 1) throw invalidOption("maxQueued", "to be a whole number ≥ 1", options.maxQueued);
    this.client = options.client;
  }

  /** Series waiting for a writer. */
  get queued(): number {
    return this.queue.size;
  }

  /** EventRecorder.flush: resolves once the queue and the writers are idle, or after `timeoutMs` with the rest dropped. */
  flush(timeoutMs?: number): Promise<void> {
    if (this.queue.size === 0 && this.inFlight === 0) return Promise.resolve();
    const drained = new Promise<void>((resolve) => this.drained.push(resolve));
    if (timeoutMs === undefined) return drained;
    let cancel: (() => void) | undefined;
    const expired = new Promise<void>((resolve) => {
      cancel = this.clock.setTimer(timeoutMs, () => {
        const left = this.queue.size;
        for (let entry = this.queue.take(); entry; entry = this.queue.take()) {
          entry.state = "idle";
          this.report("dropped");
        }
        if (left > 0) this.log.warn({ dropped: left, timeoutMs }, "events still queued at shutdown were dropped");
        resolve();
      });
    });
    return Promise.race([drained, expired]).finally(() => cancel?.());
  }

  full(): boolean {
    return this.queue.size >= this.maxQueued;
  }

  drop(nowMs: number): void {
    this.droppedSinceWarning++;
    this.report("dropped");
    if (!this.warningDue("drop", nowMs)) return;
    this.log.warn({ dropped: this.droppedSinceWarning, maxQueued: this.maxQueued }, "event queue full; events dropped");
    this.droppedSinceWarning = 0;
  }

  /** Whether a warning of this kind may be logged now: a flood of drops or failures would otherwise flood the log. */
  private warningDue(kind: keyof EventWriter["lastWarning"], nowMs: number): boolean {
    if (nowMs - this.lastWarning[kind] < WARNING_PERIOD_MS) return false;
    this.lastWarning[kind] = nowMs;
    return true;
  }

  /** One writer per series: a queued series waits with its latest count; repeats during a write mark it dirty. */
  schedule(entry: SeriesEntry): void {
    if (entry.state === "writing") entry.dirty = true;
    if (entry.state !== "idle") return;
    entry.state = "queued";
    this.queue.push(entry);
    this.pump();
  }

  /** Writers allowed now. Every write that ends pumps again, so the limit is looked at again as the backlog changes. */
  private writers(): number {
    if (this.maxInFlightWhileBusy === this.maxInFlight || this.options.busy === undefined) return this.maxInFlight;
    try {
      return this.options.busy() ? this.maxInFlightWhileBusy : this.maxInFlight;
    } catch (err) {
      // Asked at every write.
      if (this.warningDue("busy", this.clock.now())) {
        this.log.warn({ err: err instanceof Error ? err.message : String(err) }, "event busy callback failed");
      }
      return this.maxInFlight;
    }
  }

  private pump(): void {
    const writers = this.queue.size === 0 || !this.mayStart() ? 0 : this.writers();
    while (this.inFlight < writers) {
      const entry = this.queue.take();
      if (!entry) break;
      entry.state = "writing";
      entry.dirty = false;
      this.inFlight++;
      void this.run(entry);
    }
    if (this.inFlight === 0 && this.queue.size === 0) this.batchOpen = false;
    if (this.inFlight === 0 && this.queue.size === 0 && this.drained.length > 0) {
      const waiters = this.drained;
      this.drained = [];
      for (const resolve of waiters) resolve();
    }
  }

  /**
   * Whether writes may start now: not while paused by a 429 (a timer pumps when the pause ends), and not before the
   * batch window that the first queued event opened has passed (a timer pumps then).
   */
  private mayStart(): boolean {
    const now = this.clock.now();
    if (now < this.pausedUntil) {
      // A timer may fire a millisecond before the clock reaches the pause's end (node's timers and the wall clock round
      // apart): without a timer for the rest, nothing would start the writers again until the next event.
      if (this.cancelResume === undefined) this.resumeIn(this.pausedUntil - now);
      return false;
    }
    if (this.batchOpen || this.batchDelayMs === 0) return true;
    // Wall time, not the recorder's clock: the window only decides when writes start (a transport matter), while the
    // clock decides what events say (times, series, rate limits, pauses).
    if (this.batchTimer === undefined) {
      this.batchTimer = setTimeout(() => {
        this.batchTimer = undefined;
        this.batchOpen = true;
        this.pump();
      }, this.batchDelayMs);
      this.batchTimer.unref?.();
    }
    return false;
  }

  /** Stops every writer for `ms` (the longest pause asked wins); the queue keeps accepting and folding meanwhile. */
  private pause(ms: number): void {
    const until = this.clock.now() + ms;
    if (until <= this.pausedUntil) return;
    this.pausedUntil = until;
    this.cancelResume?.();
    this.resumeIn(ms);
  }

  /** Pumps the queue again in `ms` (the end of a pause). */
  private resumeIn(ms: number): void {
    this.cancelResume = this.clock.setTimer(ms, () => {
      this.cancelResume = undefined;
      this.pump();
    });
  }

  private async run(entry: SeriesEntry): Promise<void> {
    const outcome = await this.write(entry).catch(() => "failed" as const);
    this.inFlight--;
    if (typeof outcome === "number") {
      // Throttled: not written and not lost. First in line again, with every repeat folded in so far.
      entry.state = "queued";
      entry.dirty = false;
      this.queue.unshift(entry);
      this.report("throttled");
      this.pause(outcome);
      return this.pump();
    }
    entry.state = "idle";
    if (outcome === "written") this.throttle.reset();
    this.report(outcome);
    // The follow-up write goes to the back of the queue, so a busy series does not keep a writer to itself. It is
    // a repeat, so it is never dropped: the queue may exceed maxQueued by at most maxInFlight this way.
    if (entry.dirty) {
      entry.dirty = false;
      entry.state = "queued";
      this.queue.push(entry);
    }
    this.pump();
  }

  private report(result: EventResult): void {
    try {
      this.options.onResult?.(result);
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, "event onResult callback failed");
    }
  }

  /** Writes the series as it stands: `failed` (logged) when the write failed, the pause to take when throttled. */
  private async write(entry: SeriesEntry): Promise<"written" | "failed" | number> {
    const series = entry.count > 1 ? { count: entry.count, lastObservedTime: formatMicroTime(new Date(entry.lastObserved)) } : undefined;
    try {
      if (entry.created) {
        try {
          await this.client.patch(entry.name, "merge", { series }, { namespace: entry.namespace });
          return "written";
        } catch (err) {
          // The event expired or was deleted: start it over under a new name.
          if (!isPlatformError(err, "NOT_FOUND")) throw err;
          entry.created = false;
          entry.name = this.eventName(entry.base.regarding?.name ?? "event", this.clock.now());
        }
      }
      const obj: Event = { ...entry.base, metadata: { name: entry.name, namespace: entry.namespace }, ...(series ? { series } : {}) };
      await this.client.create(obj, { namespace: entry.namespace });
      entry.created = true;
      return "written";
    } catch (err) {
      if (isPlatformError(err, "TOO_MANY_REQUESTS")) return this.throttledFor(err.details.retryAfterSeconds);
      this.log.warn({ err: isPlatformError(err) ? { code: err.code, message: err.message } : String(err), event: entry.name }, "event write failed");
      return "failed";
    }
  }

  /** The server's Retry-After (bounded), or the next backoff step when it named none; logged once per 10 s. */
  private throttledFor(retryAfterSeconds: unknown): number {
    const now = this.clock.now();
    const ms = typeof retryAfterSeconds === "number" && retryAfterSeconds >= 0 ? Math.min(retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS) : this.throttle.next(now);
    if (this.warningDue("throttled", now)) this.log.warn({ pauseMs: Math.round(ms), queued: this.queue.size }, "the server throttles event writes (429); events pause and stay queued");
    return ms;
  }
}

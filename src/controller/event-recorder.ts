// Records events/v1 Events about objects: best effort, repeats folded into a series, spam limited per object,
// written in batches from a bounded queue by a few writers so a burst of events does not crowd out the controllers'
// own writes, and paused (nothing lost) while the server answers 429 TooManyRequests.
import type { ApiObject } from "../api/meta.js";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import type { ObjectReference } from "../api/types/core.js";
import { EVENT_KIND, EVENT_TYPES, EVENT_VERSION, type Event, type EventType } from "../api/types/event.js";
import type { ResourceClient } from "../client/types.js";
import { invalidOption, isPlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { TokenBucket } from "../time/token-bucket.js";
import { JitteredBackoff } from "../time/backoff.js";
import { formatMicroTime } from "../api/meta.js";
import { systemClock, type Clock } from "../time/clock.js";
import { Fifo, Lru } from "./event-caches.js";
import type { EventRecorderOptions, EventResult } from "./event-recorder-types.js";
import { EVENT_FIELD_LIMIT, EVENT_NOTE_LIMIT_BYTES } from "../api/types/event.js";
import { eventNamePrefix, toReference, truncateBytes, truncateChars } from "./event-text.js";

/** Longest pause a server's Retry-After can impose (a larger one is cut to this). */
const MAX_RETRY_AFTER_MS = 60_000;

/** At most one warning of a kind per this period: queue full (with the count dropped since), busy() failing. */
const WARNING_PERIOD_MS = 10_000;

interface SeriesEntry {
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

export class EventRecorder {
  private readonly client: ResourceClient<Event>;
  private readonly apiVersion: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly windowMs: number;
  private readonly series: Lru<SeriesEntry>;
  private readonly buckets: Lru<TokenBucket> | undefined;
  private readonly rateLimit: { readonly burst: number; readonly qps: number } | undefined;
  private readonly maxInFlight: number;
  private readonly maxInFlightWhileBusy: number;
  private readonly maxQueued: number;
  private readonly queue = new Fifo<SeriesEntry>();
  private inFlight = 0;
  private drained: (() => void)[] = [];
  private droppedSinceWarning = 0;
  private readonly lastWarning = { drop: -Infinity, busy: -Infinity, throttled: -Infinity };
  private lastNanos = 0n;
  private readonly batchDelayMs: number;
  /** Writers may start: set when a batch window ends, cleared when the queue and the writers are idle again. */
  private batchOpen = false;
  private batchTimer: ReturnType<typeof setTimeout> | undefined;
  /** No write starts before this time (a 429's Retry-After or backoff). */
  private pausedUntil = -Infinity;
  private cancelResume: (() => void) | undefined;
  private readonly throttle: JitteredBackoff;

  constructor(private readonly options: EventRecorderOptions) {
    const { reportingController, reportingInstance } = options;
    if (!reportingController || reportingController.length > EVENT_FIELD_LIMIT) {
      throw invalidOption("reportingController", `to be 1 to ${EVENT_FIELD_LIMIT} characters`, reportingController);
    }
    if (!reportingInstance || reportingInstance.length > EVENT_FIELD_LIMIT) {
      throw invalidOption("reportingInstance", `to be 1 to ${EVENT_FIELD_LIMIT} characters`, reportingInstance);
    }
    this.windowMs = options.seriesWindowMs ?? 6 * 60_000;
    if (!(this.windowMs > 0)) throw invalidOption("seriesWindowMs", "> 0", options.seriesWindowMs);
    const cacheSize = options.cacheSize ?? 4096;
    if (!Number.isSafeInteger(cacheSize) || cacheSize < 1) throw invalidOption("cacheSize", "to be a whole number ≥ 1", options.cacheSize);
    const limit = options.rateLimit ?? { burst: 25, qps: 1 / 300 };
    if (limit && !(Number.isInteger(limit.burst) && limit.burst >= 1 && limit.qps > 0)) throw invalidOption("rateLimit", "to have a whole burst ≥ 1 and qps > 0", limit);
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
    this.apiVersion = `${groupNames(options.groupSuffix ?? DEFAULT_GROUP_SUFFIX).events}/${EVENT_VERSION}`;
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ subsystem: "event-recorder" });
    this.series = new Lru(cacheSize);
    this.buckets = limit ? new Lru(cacheSize) : undefined;
    this.rateLimit = limit || undefined;
  }

  /**
   * Records that `action` happened to `regarding` for `reason`. Never throws and never waits: problems are
   * logged. Text over the seed limits is truncated (reason and action 128 characters, note 1 KiB).
   */
  event(regarding: ObjectReference | ApiObject, type: EventType, reason: string, action: string, note: string, related?: ObjectReference | ApiObject): void {
    try {
      this.record(toReference(regarding), type, reason, action, note, related && toReference(related));
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : String(err) }, "event not recorded");
    }
  }

  /** Series waiting for a writer. */
  get queued(): number {
    return this.queue.size;
  }

  /**
   * Resolves once the queue is empty and no write is in flight. With `timeoutMs` (shutdown) it gives up after that
   * long: the series still queued are dropped (counted, one log line) and writes in flight are left to finish alone,
   * so a slow server cannot hold a stopping controller (and its lease) for as long as a burst's backlog takes.
   */
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

  private record(regarding: ObjectReference, type: EventType, reason: string, action: string, note: string, related?: ObjectReference): void {
    if (!regarding.name) return void this.log.warn({ reason }, "event without a regarding object name; dropped");
    if (!EVENT_TYPES.includes(type)) return void this.log.warn({ type, reason }, "event type must be Normal or Warning; dropped");
    if (!reason || !action) return void this.log.warn({ reason, action }, "event without a reason or action; dropped");
    const now = this.clock.now();
    const objectId = JSON.stringify([regarding.apiVersion, regarding.kind, regarding.namespace, regarding.name, regarding.uid]);
    if (!this.allow(objectId)) return void this.log.debug({ regarding, reason }, "event rate limit reached; dropped");
    const text = { reason: truncateChars(reason, EVENT_FIELD_LIMIT), action: truncateChars(action, EVENT_FIELD_LIMIT), note: truncateBytes(note ?? "", EVENT_NOTE_LIMIT_BYTES) };
    const key = JSON.stringify([objectId, type, text.reason, text.action, text.note]);
    const existing = this.series.get(key);
    if (existing && now - existing.lastObserved <= this.windowMs) {
      // A repeat of a series that is queued or being written is folded in and costs no queue place.
      if (existing.state === "idle" && this.full()) return this.drop(now);
      existing.count++;
      existing.lastObserved = now;
      return this.schedule(existing);
    }
    if (this.full()) return this.drop(now);
    const namespace = regarding.namespace || "default";
    const base: Event = {
      apiVersion: this.apiVersion,
      kind: EVENT_KIND,
      metadata: { name: "", namespace },
      eventTime: formatMicroTime(new Date(now)),
      type,
      ...text,
      regarding,
      ...(related ? { related } : {}),
      reportingController: this.options.reportingController,
      reportingInstance: this.options.reportingInstance,
    };
    const entry: SeriesEntry = { namespace, name: this.eventName(regarding.name, now), base, count: 1, lastObserved: now, created: false, dirty: false, state: "idle" };
    this.series.set(key, entry);
    this.schedule(entry);
  }

  private allow(objectId: string): boolean {
    if (!this.buckets || !this.rateLimit) return true;
    let bucket = this.buckets.get(objectId);
    if (!bucket) {
      bucket = new TokenBucket({ burst: this.rateLimit.burst, qps: this.rateLimit.qps, clock: this.clock });
      this.buckets.set(objectId, bucket);
    }
    return bucket.tryAcquire();
  }

  /** `<name>.<hex nanoseconds>`, kept unique when two events fall in the same millisecond. */
  private eventName(regardingName: string, nowMs: number): string {
    let nanos = BigInt(nowMs) * 1_000_000n;
    if (nanos <= this.lastNanos) nanos = this.lastNanos + 1n;
    this.lastNanos = nanos;
    return `${eventNamePrefix(regardingName)}.${nanos.toString(16)}`;
  }

  private full(): boolean {
    return this.queue.size >= this.maxQueued;
  }

  private drop(nowMs: number): void {
    this.droppedSinceWarning++;
    this.report("dropped");
    if (!this.warningDue("drop", nowMs)) return;
    this.log.warn({ dropped: this.droppedSinceWarning, maxQueued: this.maxQueued }, "event queue full; events dropped");
    this.droppedSinceWarning = 0;
  }

  /** Whether a warning of this kind may be logged now: a flood of drops or failures would otherwise flood the log. */
  private warningDue(kind: keyof EventRecorder["lastWarning"], nowMs: number): boolean {
    if (nowMs - this.lastWarning[kind] < WARNING_PERIOD_MS) return false;
    this.lastWarning[kind] = nowMs;
    return true;
  }

  /** One writer per series: a queued series waits with its latest count; repeats during a write mark it dirty. */
  private schedule(entry: SeriesEntry): void {
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
    if (now < this.pausedUntil) return false;
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

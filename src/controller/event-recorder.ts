// Records events/v1 Events about objects: repeats folded into a series, spam limited per object.
//
// Best effort: each series goes to the writers (event-writer.ts), which write it off the controllers' path.
import { formatMicroTime, type ApiObject } from "../api/meta.js";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import type { ObjectReference } from "../api/types/core.js";
import { EVENT_FIELD_LIMIT, EVENT_KIND, EVENT_NOTE_LIMIT_BYTES, EVENT_TYPES, EVENT_VERSION, type Event, type EventType } from "../api/types/event.js";
import { invalidOption } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { TokenBucket } from "../time/token-bucket.js";
import { systemClock, type Clock } from "../time/clock.js";
import { Lru } from "./event-caches.js";
import type { EventRecorderOptions } from "./event-recorder-types.js";
import { eventNamePrefix, toReference, truncateBytes, truncateChars } from "./event-text.js";
import { EventWriter, type SeriesEntry } from "./event-writer.js";

export class EventRecorder {
  private readonly apiVersion: string;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly windowMs: number;
  private readonly series: Lru<SeriesEntry>;
  private readonly buckets: Lru<TokenBucket> | undefined;
  private readonly rateLimit: { readonly burst: number; readonly qps: number } | undefined;
  private readonly writer: EventWriter;
  private lastNanos = 0n;

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
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ subsystem: "event-recorder" });
    // The writers check their own options (maxInFlight, maxInFlightWhileBusy, batchDelayMs, throttleBackoff, maxQueued).
    this.writer = new EventWriter(options, this.clock, this.log, (regardingName, nowMs) => this.eventName(regardingName, nowMs));
    this.apiVersion = `${groupNames(options.groupSuffix ?? DEFAULT_GROUP_SUFFIX).events}/${EVENT_VERSION}`;
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
    return this.writer.queued;
  }

  /**
   * Resolves once the queue is empty and no write is in flight. With `timeoutMs` (shutdown) it gives up after that
   * long: the series still queued are dropped (counted, one log line) and writes in flight are left to finish alone,
   * so a slow server cannot hold a stopping controller (and its lease) for as long as a burst's backlog takes.
   */
  flush(timeoutMs?: number): Promise<void> {
    return this.writer.flush(timeoutMs);
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
      if (existing.state === "idle" && this.writer.full()) return this.writer.drop(now);
      existing.count++;
      existing.lastObserved = now;
      return this.writer.schedule(existing);
    }
    if (this.writer.full()) return this.writer.drop(now);
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
    this.writer.schedule(entry);
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
}

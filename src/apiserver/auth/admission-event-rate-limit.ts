// Admission (validating): EventRateLimit — token buckets on Event creates and updates, server-wide, per namespace, per
// user, per event source and object; a request that finds any of its buckets empty gets 429 TooManyRequests.
import { LRUCache } from "lru-cache";
import type { ApiObject } from "../../api/meta.js";
import type { EventRateLimit, EventRateLimitConfig, EventRateLimitType } from "../../config/event-rate-limit.js";
import { PlatformError } from "../../errors.js";
import type { Clock } from "../../time/clock.js";
import { TokenBucket } from "../../time/token-bucket.js";
import type { AdmissionAttributes, ValidatingPlugin } from "./admission.js";

const text = (v: unknown): string => (typeof v === "string" ? v : "");
const record = (v: unknown): Record<string, unknown> => (typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/**
 * The reporter and the object an Event is about, read from either form: core v1 (`source`, `involvedObject`) or
 * events v1 (`deprecatedSource`, `regarding`), with the reporting fields where the source is empty, so one event
 * source writing through both APIs fills one bucket. A JSON list: no separator can be confused with a value.
 */
function sourceAndObject(a: AdmissionAttributes, obj: ApiObject | undefined): string {
  const core = a.group === "";
  const source = record(obj?.[core ? "source" : "deprecatedSource"]);
  const object = record(obj?.[core ? "involvedObject" : "regarding"]);
  const component = text(source.component) || text(obj?.[core ? "reportingComponent" : "reportingController"]);
  const host = text(source.host) || text(obj?.reportingInstance);
  return JSON.stringify([component, host, ...["kind", "namespace", "name", "uid", "apiVersion"].map((k) => text(object[k]))]);
}

const KEYS: Record<EventRateLimitType, (a: AdmissionAttributes, obj: ApiObject | undefined) => string> = {
  Server: () => "",
  Namespace: (a) => a.namespace ?? "",
  User: (a) => a.user.username,
  SourceAndObject: sourceAndObject,
};

/** One limit: its buckets by key (a single one for Server; for the others the most recently used `cacheSize`). */
class Enforcer {
  readonly #buckets: LRUCache<string, TokenBucket>;

  constructor(
    readonly limit: EventRateLimit,
    readonly clock: Clock,
  ) {
    // An evicted key starts again with a full burst, as upstream's cache does.
    this.#buckets = new LRUCache({ max: limit.type === "Server" ? 1 : limit.cacheSize });
  }

  /** Takes a token from the key's bucket, or says how long until it has one. */
  take(key: string): { readonly waitMs: number } | undefined {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket({ qps: this.limit.qps, burst: this.limit.burst, clock: this.clock });
      this.#buckets.set(key, bucket);
    }
    return bucket.tryAcquire() ? undefined : { waitMs: bucket.msUntilToken() };
  }
}

/** Whether the write is an Event create or update, in the core group's Events view or the events API. */
function isEventWrite(a: AdmissionAttributes, eventsGroup: string): boolean {
  return (a.operation === "CREATE" || a.operation === "UPDATE") && a.resource === "events" && a.subresource === undefined && (a.group === "" || a.group === eventsGroup);
}

export function eventRateLimitPlugin(config: EventRateLimitConfig, clock: Clock): ValidatingPlugin {
  const enforcers = config.limits.map((limit) => new Enforcer(limit, clock));
  return {
    name: "EventRateLimit",
    admit(a, obj, _old, ctx) {
      // A dry run stores nothing, so it spends nothing (as upstream).
      if (a.dryRun || !isEventWrite(a, ctx.names.events)) return;
      const refusals: { readonly message: string; readonly waitMs: number }[] = [];
      // Every limit takes its token even when another refuses, as upstream: a flood is counted everywhere it lands.
      for (const e of enforcers) {
        const key = KEYS[e.limit.type](a, obj);
        const refused = e.take(key);
        if (refused) refusals.push({ message: `limit reached on type ${e.limit.type} for key ${JSON.stringify(key)}`, waitMs: refused.waitMs });
      }
      if (refusals.length === 0) return;
      const message = refusals.length === 1 ? refusals[0]!.message : `[${refusals.map((r) => r.message).join(", ")}]`;
      // Upstream sends no Retry-After; the time until every refusing bucket has a token lets a client wait just enough.
      const retryAfterSeconds = Math.max(1, Math.ceil(Math.max(...refusals.map((r) => r.waitMs)) / 1000));
      throw new PlatformError("TOO_MANY_REQUESTS", message, { details: { retryAfterSeconds } });
    },
  };
}

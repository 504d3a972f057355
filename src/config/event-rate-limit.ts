// The EventRateLimit plugin's Configuration (eventratelimit.admission.<suffix>/v1alpha1): token-bucket limits on Event writes.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { join, type FieldReader } from "../fields/reader.js";
import { checkHeader } from "./config-document.js";

/** Upstream's limit types: one bucket for the server, or one per namespace, per user, per event source and object. */
export const EVENT_RATE_LIMIT_TYPES = ["Server", "Namespace", "User", "SourceAndObject"] as const;
export type EventRateLimitType = (typeof EVENT_RATE_LIMIT_TYPES)[number];

export const EVENT_RATE_LIMIT_KIND = "Configuration";
/** Buckets kept per limit (least recently used dropped first) when `cacheSize` is unset or 0, as upstream. */
export const DEFAULT_EVENT_RATE_LIMIT_CACHE_SIZE = 4096;

export interface EventRateLimit {
  readonly type: EventRateLimitType;
  /** Tokens added per second once the burst is spent. */
  readonly qps: number;
  /** The bucket's size, and what a new bucket starts with. */
  readonly burst: number;
  /** Buckets kept for the keys of this limit; unused for `Server` (one bucket). */
  readonly cacheSize: number;
}

export interface EventRateLimitConfig {
  readonly limits: readonly EventRateLimit[];
}

export function eventRateLimitApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  return `eventratelimit.admission.${groupNames(groupSuffix).suffix}/v1alpha1`;
}

const LIMIT_FIELDS = ["type", "qps", "burst", "cacheSize"];
const INT32_MAX = 2_147_483_647;

/** A whole number within int32 (absent → undefined); the field types are int32 upstream. */
function int32(value: unknown, path: string, r: FieldReader): number | undefined {
  const n = r.integer(value, path);
  return n !== undefined && Math.abs(n) > INT32_MAX ? r.problem(path, `a whole number of at most ${INT32_MAX}`, value) : n;
}

/** A required int32 that must be positive: upstream's "must be positive". */
function positive(value: unknown, path: string, r: FieldReader): number {
  if (value === undefined || value === null) return r.missing(path, "to be a positive whole number") ?? 0;
  const n = int32(value, path, r);
  if (n !== undefined && n <= 0) r.problem(path, "to be positive", value);
  return n ?? 0;
}

function readLimit(value: unknown, at: string, r: FieldReader): EventRateLimit | undefined {
  const raw = r.object(value, at, LIMIT_FIELDS);
  if (!raw) return r.missing(at, "to be a limit with type, qps and burst");
  const type = raw.type === undefined || raw.type === null
    ? (r.missing(join(at, "type"), `to be one of ${EVENT_RATE_LIMIT_TYPES.join(", ")}`), "Server")
    : r.oneOf(raw.type, join(at, "type"), EVENT_RATE_LIMIT_TYPES, "Server");
  const qps = positive(raw.qps, join(at, "qps"), r);
  const burst = positive(raw.burst, join(at, "burst"), r);
  let cacheSize = int32(raw.cacheSize, join(at, "cacheSize"), r) ?? 0;
  // As upstream: a negative size is refused except on Server limits, where the size is not used.
  if (cacheSize < 0 && type !== "Server") r.problem(join(at, "cacheSize"), "not to be negative", cacheSize);
  if (cacheSize <= 0) cacheSize = DEFAULT_EVENT_RATE_LIMIT_CACHE_SIZE;
  return { type, qps, burst, cacheSize };
}

/** Reads a Configuration document found at `at` (a file's top level, or a plugin's inline `configuration`). */
export function readEventRateLimitConfig(doc: unknown, at: string, r: FieldReader, groupSuffix?: string): EventRateLimitConfig {
  const raw = r.object(doc, at, ["apiVersion", "kind", "limits"]);
  if (!raw) return { limits: r.missing(at, `to be an EventRateLimit ${EVENT_RATE_LIMIT_KIND} (${eventRateLimitApiVersion(groupSuffix)})`) ?? [] };
  checkHeader(raw, { apiVersion: eventRateLimitApiVersion(groupSuffix), kind: EVENT_RATE_LIMIT_KIND }, r, at);
  const limitsAt = join(at, "limits");
  if (raw.limits === undefined || raw.limits === null || (Array.isArray(raw.limits) && raw.limits.length === 0)) {
    r.missing(limitsAt, "not to be empty (at least one limit: Server, Namespace, User or SourceAndObject)");
    return { limits: [] };
  }
  return { limits: r.list(raw.limits, limitsAt, (v, path) => readLimit(v, path, r)) };
}

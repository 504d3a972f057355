// When a failed call may be sent again, and how long to wait first (jittered exponential backoff, Retry-After).
import { invalidOption, type PlatformError } from "../errors.js";

export interface RetryOptions {
  /** Attempts in all, the first included (default 5; 1 disables retries). */
  readonly maxAttempts?: number;
  /** First backoff step (default 250 ms), doubled per attempt up to `maxDelayMs` (default 8 s). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Upper bound on a server's Retry-After (default 60 s). */
  readonly maxRetryAfterMs?: number;
  /** Source of jitter in [0, 1) (default Math.random; tests pass a fixed one). */
  readonly random?: () => number;
  /**
   * Whether a call that never reached the server (connection refused, a DNS lookup that failed for now) is tried
   * again (default true: a controller outlives a server's restart). A person's command line sets false and hears at
   * once, as from kubectl.
   */
  readonly unreachable?: boolean;
}

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxRetryAfterMs: number;
  readonly random: () => number;
  readonly unreachable: boolean;
}

export function retryPolicy(o: RetryOptions = {}): RetryPolicy {
  const p: RetryPolicy = {
    maxAttempts: o.maxAttempts ?? 5,
    baseDelayMs: o.baseDelayMs ?? 250,
    maxDelayMs: o.maxDelayMs ?? 8000,
    maxRetryAfterMs: o.maxRetryAfterMs ?? 60_000,
    random: o.random ?? Math.random,
    unreachable: o.unreachable ?? true,
  };
  if (!Number.isInteger(p.maxAttempts) || p.maxAttempts < 1 || p.maxAttempts > 100) throw invalidOption("retry.maxAttempts", "to be an integer 1–100", p.maxAttempts);
  for (const key of ["baseDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const) {
    if (!Number.isFinite(p[key]) || p[key] < 0) throw invalidOption(`retry.${key}`, "≥ 0", p[key]);
  }
  return p;
}

/**
 * Whether the call may be repeated safely: reads, deletes and conditional (resourceVersion) updates on
 * 429, 5xx or a broken connection; anything, a create included, when the connection was refused, since
 * then nothing was sent (unless `unreachable` is false: then such a call is not repeated at all).
 */
export function mayRetry(err: PlatformError, idempotent: boolean, unreachable = true): boolean {
  if (err.code === "IO_ERROR" && err.details.sent === false && err.retryable) return unreachable;
  return idempotent && err.retryable;
}

/** Delay before attempt `attempt + 1` (attempt counts from 1): the server's Retry-After, else backoff with jitter. */
export function retryDelayMs(attempt: number, err: PlatformError, p: RetryPolicy): number {
  const after = err.details.retryAfterSeconds;
  if (typeof after === "number" && after >= 0) return Math.min(after * 1000, p.maxRetryAfterMs);
  const step = Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1));
  // Equal jitter: at least half the step, so a burst of clients spreads out without retrying at once.
  return Math.round(step / 2 + p.random() * (step / 2));
}

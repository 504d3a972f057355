// Delays for retries: per-key exponential backoff for the work queue, jittered backoff for reconnects.
import { invalidOption } from "../errors.js";

/** What the work queue asks before re-adding a failed key. */
export interface KeyBackoff {
  /** The delay before the next retry of `key`; each call counts one more failure. */
  when(key: string): number;
  forget(key: string): void;
  numRequeues(key: string): number;
}

export interface ItemBackoffOptions {
  /** First delay (default 5 ms, as upstream controllers use). */
  readonly baseMs?: number;
  /** Largest delay (default 1000 s). */
  readonly maxMs?: number;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw invalidOption(name, "to be a positive number", value);
  return v;
}

/** base · 2^failures, capped; a key's count resets on `forget`. */
export class ItemExponentialBackoff implements KeyBackoff {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(options: ItemBackoffOptions = {}) {
    this.baseMs = positive("baseMs", options.baseMs, 5);
    this.maxMs = positive("maxMs", options.maxMs, 1_000_000);
    if (this.maxMs < this.baseMs) throw invalidOption("maxMs", `to be at least baseMs (${this.baseMs})`, this.maxMs);
  }

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2^n overflows to Infinity long after the cap is reached, and Math.min handles Infinity.
    return Math.min(this.maxMs, this.baseMs * 2 ** n);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface JitteredBackoffOptions {
  /** First delay (default 800 ms, like upstream reflectors). */
  readonly initialMs?: number;
  /** Largest delay before jitter (default 30 s). */
  readonly maxMs?: number;
  /** Growth per failure (default 2). */
  readonly factor?: number;
  /** Each delay grows by up to this fraction at random (default 1: between d and 2d). */
  readonly jitter?: number;
  /** After this long without a failure the delay starts over (default 2 min). */
  readonly resetAfterMs?: number;
}

/** Reconnect delays: exponential, capped, jittered, and forgiven after a quiet period. */
export class JitteredBackoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly factor: number;
  private readonly jitter: number;
  private readonly resetAfterMs: number;
  private current = 0;
  private lastAt: number | undefined;

  constructor(options: JitteredBackoffOptions = {}, private readonly random: () => number = Math.random) {
    this.initialMs = positive("backoff.initialMs", options.initialMs, 800);
    this.maxMs = positive("backoff.maxMs", options.maxMs, 30_000);
    this.factor = positive("backoff.factor", options.factor, 2);
    this.resetAfterMs = positive("backoff.resetAfterMs", options.resetAfterMs, 120_000);
    this.jitter = options.jitter ?? 1;
    if (!(this.jitter >= 0 && this.jitter <= 10)) throw invalidOption("backoff.jitter", "between 0 and 10", options.jitter);
  }

  /** The delay to wait now, given the current time in ms. */
  next(nowMs: number): number {
    if (this.lastAt === undefined || nowMs - this.lastAt > this.resetAfterMs) this.current = this.initialMs;
    else this.current = Math.min(this.maxMs, this.current * this.factor);
    const delay = this.current * (1 + this.jitter * this.random());
    this.lastAt = nowMs + delay;
    return delay;
  }

  reset(): void {
    this.current = 0;
    this.lastAt = undefined;
  }
}

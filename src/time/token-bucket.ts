// Rate limiting: a token bucket where burst is the cap and qps the refill per second (qps ≤ 0: unlimited).
import { invalidOption } from "../errors.js";
import { abortReason, systemClock, type Clock } from "./clock.js";

/** What a client asks before each request. */
export interface RateLimiter {
  /** Waits for a token; rejects with the signal's reason if it aborts first (the token is given back). */
  acquire(signal?: AbortSignal): Promise<void>;
  /** Takes a token if one is available now. */
  tryAcquire(): boolean;
}

export interface TokenBucketOptions {
  readonly qps: number;
  readonly burst: number;
  readonly clock?: Clock;
}

export class TokenBucket implements RateLimiter {
  readonly #qps: number;
  readonly #burst: number;
  readonly #clock: Clock;
  /** May go below zero: each waiter holds a reservation, so tokens are handed out in arrival order. */
  #tokens: number;
  #last: number;

  constructor(options: TokenBucketOptions) {
    if (!Number.isFinite(options.qps)) throw invalidOption("qps", "to be a number (≤ 0 for unlimited)", options.qps);
    if (options.qps > 0 && (!Number.isInteger(options.burst) || options.burst < 1)) {
      throw invalidOption("burst", "to be an integer ≥ 1 when qps > 0", options.burst);
    }
    this.#qps = options.qps;
    this.#burst = options.burst;
    this.#clock = options.clock ?? systemClock;
    this.#tokens = options.burst;
    this.#last = this.#clock.now();
  }

  get unlimited(): boolean {
    return this.#qps <= 0;
  }

  #refill(): void {
    const now = this.#clock.now();
    if (now > this.#last) this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) * this.#qps) / 1000);
    this.#last = now;
  }

  tryAcquire(): boolean {
    if (this.unlimited) return true;
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Milliseconds until tryAcquire() would succeed (0: it would now); a refusal's Retry-After is derived from it. */
  msUntilToken(): number {
    if (this.unlimited) return 0;
    this.#refill();
    return this.#tokens >= 1 ? 0 : Math.ceil(((1 - this.#tokens) * 1000) / this.#qps);
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw abortReason(signal);
    if (this.unlimited) return;
    this.#refill();
    this.#tokens -= 1;
    if (this.#tokens >= 0) return;
    const waitMs = Math.ceil((-this.#tokens * 1000) / this.#qps);
    await this.#clock.sleep(waitMs, signal);
    if (signal?.aborted) {
      this.#tokens += 1;
      throw abortReason(signal);
    }
  }
}

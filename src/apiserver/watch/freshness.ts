// Callers waiting until the watch cache has seen a revision (NotOlderThan reads), each with its own time limit.
import { PlatformError } from "../../errors.js";
import type { CancelTimer, Clock } from "../../time/clock.js";

interface Waiter {
  readonly revision: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
  cancelTimer: CancelTimer | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

export class FreshnessWaiters {
  readonly #clock: Clock;
  /** The revision the cache can answer for; below 0 while it cannot answer at all. */
  readonly #current: () => number;
  readonly #waiters = new Set<Waiter>();

  constructor(clock: Clock, current: () => number) {
    this.#clock = clock;
    this.#current = current;
  }

  wait(revision: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.#current() >= revision) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { revision, resolve, reject, cancelTimer: undefined, signal, onAbort: () => this.#settle(waiter, signal!.reason) };
      if (timeoutMs !== Infinity) {
        waiter.cancelTimer = this.#clock.setTimer(timeoutMs, () => {
          const current = this.#current();
          this.#settle(waiter, new PlatformError("TIMEOUT", `too large resource version: ${revision}, current resource version: ${Math.max(current, 0)}`, {
            details: { revision, currentRevision: current, retryAfterSeconds: 1 },
          }));
        });
      }
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }

  /** Resolves every waiter whose revision has been reached. */
  check(): void {
    if (this.#waiters.size === 0) return;
    const current = this.#current();
    for (const waiter of this.#waiters) if (current >= waiter.revision) this.#settle(waiter);
  }

  rejectAll(err: Error): void {
    for (const waiter of this.#waiters) this.#settle(waiter, err);
  }

  #settle(waiter: Waiter, err?: unknown): void {
    if (!this.#waiters.delete(waiter)) return;
    waiter.cancelTimer?.();
    waiter.signal?.removeEventListener("abort", waiter.onAbort);
    if (err === undefined) waiter.resolve();
    else waiter.reject(err);
  }
}

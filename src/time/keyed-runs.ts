// Work per key on a clock: one run of a key at a time, a key asked for while it runs runs again after, retries backed off.
import { ItemExponentialBackoff, type ItemBackoffOptions } from "./backoff.js";
import type { CancelTimer, Clock } from "./clock.js";

export interface KeyedRunsOptions extends ItemBackoffOptions {
  readonly clock: Clock;
  /**
   * The work of one key; true (or a throw) when the key must be looked at again after its backoff (`baseMs` doubled
   * per failure up to `maxMs`), false when it is done (its backoff forgotten). Errors are the caller's to log.
   */
  run(key: string): Promise<boolean>;
}

/**
 * What a work queue gives a controller, for the server's own background work (the namespace finalizer, the garbage
 * collector), which sits below the controller layer: a key is never run twice at once — one asked for while it runs
 * is run again once that run ends — and one waiting for a later time is run at once when asked for without a delay.
 */
export class KeyedRuns {
  readonly #o: KeyedRunsOptions;
  readonly #timers = new Map<string, CancelTimer>();
  /** Keys running now, and whether each was asked for again meanwhile. */
  readonly #running = new Map<string, boolean>();
  readonly #waits: ItemExponentialBackoff;
  #closed = false;

  constructor(options: KeyedRunsOptions) {
    this.#o = options;
    this.#waits = new ItemExponentialBackoff(options);
  }

  /** Runs `key` soon (or after `delayMs`); a key already waiting keeps the earlier of its two times. */
  schedule(key: string, delayMs = 0): void {
    if (this.#closed) return;
    if (this.#running.has(key)) return void this.#running.set(key, true);
    const pending = this.#timers.get(key);
    if (pending) {
      if (delayMs > 0) return;
      pending();
    }
    this.#timers.set(key, this.#o.clock.setTimer(delayMs, () => void this.#run(key)));
  }

  /** Keys running or waiting to run. */
  get size(): number {
    return new Set([...this.#timers.keys(), ...this.#running.keys()]).size;
  }

  /** Cancels what waits; runs in progress finish, and nothing is scheduled after them. */
  close(): void {
    this.#closed = true;
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
  }

  async #run(key: string): Promise<void> {
    this.#timers.delete(key);
    if (this.#closed) return;
    this.#running.set(key, false);
    let retry: boolean;
    try {
      retry = await this.#o.run(key);
    } catch {
      retry = true;
    }
    const again = this.#running.get(key) === true;
    this.#running.delete(key);
    if (retry) {
      const wait = this.#waits.when(key);
      this.schedule(key, again ? 0 : wait);
    } else {
      this.#waits.forget(key);
      if (again) this.schedule(key);
    }
  }
}

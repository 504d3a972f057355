// The one time source: milliseconds now, timers that return a cancel function, and sleep; the system clock here.

/** Cancels a timer; calling it after the timer fired (or twice) does nothing. */
export type CancelTimer = () => void;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms`. A background timer: it does not keep the process alive on its own. */
  setTimer(ms: number, fn: () => void): CancelTimer;
  /**
   * Resolves after `ms`, or as soon as `signal` aborts: it never rejects, callers check `signal.aborted`.
   * Someone awaits a sleep, so on the system clock its timer keeps the process alive (a CLI waiting out a retry
   * must not exit under its own feet).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The reason an aborted signal carries, or a standard AbortError when it has none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** A sleep built on a clock's timer; shared by the system clock and the fake one so both end a sleep alike. */
export function sleepOn(setTimer: (ms: number, fn: () => void) => CancelTimer, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const finish = (): void => {
      cancel();
      signal?.removeEventListener("abort", finish);
      resolve();
    };
    const cancel = setTimer(ms, finish);
    signal?.addEventListener("abort", finish, { once: true });
  });
}

function nodeTimer(ms: number, fn: () => void, keepAlive: boolean): CancelTimer {
  const timer = setTimeout(fn, Math.max(0, ms));
  if (!keepAlive) timer.unref();
  return () => clearTimeout(timer);
}

export const systemClock: Clock = {
  now: () => Date.now(),
  // A retry, resync, bookmark or freshness timer must not keep a process alive on its own.
  setTimer: (ms, fn) => nodeTimer(ms, fn, false),
  sleep: (ms, signal) => sleepOn((d, fn) => nodeTimer(d, fn, true), ms, signal),
};

// The time source of the controller runtime: wall time, sleeps and timers, with a fake clock tests drive by hand.

/** Cancels a timer; calling it after the timer fired (or twice) does nothing. */
export type CancelTimer = () => void;

export interface Clock {
  now(): Date;
  /** Resolves after `ms`, or as soon as `signal` aborts (it never rejects: callers check `signal.aborted`). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimer(ms: number, fn: () => void): CancelTimer;
}

function sleepWith(setTimer: Clock["setTimer"], ms: number, signal?: AbortSignal): Promise<void> {
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

export const realClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) => sleepWith(realClock.setTimer, ms, signal),
  setTimer(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    // A retry or resync timer must not keep a process alive on its own.
    timer.unref();
    return () => clearTimeout(timer);
  },
};

interface FakeTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** Upper bound on timers fired by one `advance`, so a timer that re-arms itself at zero delay fails a test instead of hanging it. */
const MAX_FIRES_PER_ADVANCE = 100_000;

/** Lets every promise chain that is waiting on already-settled work run to its next real wait. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told. `advance(ms)` fires due timers in time order (insertion order on
 * ties), setting `now()` to each timer's due time and letting pending promise chains run between fires.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start: Date | number = Date.UTC(2025, 0, 1)) {
    this.current = typeof start === "number" ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith((d, fn) => this.setTimer(d, fn), ms, signal);
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    const seq = this.seq++;
    this.timers.set(seq, { due: this.current + Math.max(0, ms), seq, fn });
    return () => {
      this.timers.delete(seq);
    };
  }

  /** Timers armed and not yet fired. */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** Milliseconds until the next timer fires, or undefined when none is armed. */
  nextTimerIn(): number | undefined {
    const next = this.nextDue(Number.POSITIVE_INFINITY);
    return next === undefined ? undefined : next.due - this.current;
  }

  /** Runs pending promise chains without moving time. */
  async flush(): Promise<void> {
    await settle();
    await settle();
  }

  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`expected a non-negative advance, got ${ms}`);
    const target = this.current + ms;
    await this.flush();
    for (let fired = 0; ; fired++) {
      const next = this.nextDue(target);
      if (!next) break;
      if (fired >= MAX_FIRES_PER_ADVANCE) throw new Error(`more than ${MAX_FIRES_PER_ADVANCE} timers fired in one advance`);
      this.timers.delete(next.seq);
      this.current = next.due;
      next.fn();
      await this.flush();
    }
    this.current = target;
    await this.flush();
  }

  /** Advances in steps of `stepMs` until `done()` holds or `maxMs` passed; returns whether it held. */
  async advanceUntil(done: () => boolean, maxMs: number, stepMs = 100): Promise<boolean> {
    for (let spent = 0; !done(); spent += stepMs) {
      if (spent >= maxMs) return false;
      await this.advance(stepMs);
    }
    return true;
  }

  private nextDue(limit: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers.values()) {
      if (t.due > limit) continue;
      if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

// A clock that moves only when a test says so: due timers fire in time order, synchronously or with promises settling between.
import { sleepOn, type CancelTimer, type Clock } from "./clock.js";

interface FakeTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** Upper bound on timers fired by one advance, so a timer that re-arms itself at zero delay fails a test instead of hanging it. */
const MAX_FIRES_PER_ADVANCE = 100_000;

/** Lets every promise chain that is waiting on already-settled work run to its next real wait. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `advance(ms)` fires due timers in time order (insertion order on ties), setting `now()` to each timer's due
 * time and letting pending promise chains run between fires; `tick(ms)` does the same without waiting for them.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start: number = Date.UTC(2030, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn((d, fn) => this.setTimer(d, fn), ms, signal);
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
    for (let fired = 0; this.fireNext(target, fired); fired++) await this.flush();
    this.current = target;
    await this.flush();
  }

  /**
   * Moves time at once, firing every timer that falls due (including ones set while it fires them). A negative
   * `ms` turns the clock back, as a wall clock can be, and fires nothing.
   */
  tick(ms: number): void {
    if (!Number.isFinite(ms)) throw new RangeError(`expected a finite tick, got ${ms}`);
    const target = this.current + ms;
    for (let fired = 0; this.fireNext(target, fired); fired++);
    this.current = target;
  }

  /** Advances in steps of `stepMs` until `done()` holds or `maxMs` passed; returns whether it held. */
  async advanceUntil(done: () => boolean, maxMs: number, stepMs = 100): Promise<boolean> {
    for (let spent = 0; !done(); spent += stepMs) {
      if (spent >= maxMs) return false;
      await this.advance(stepMs);
    }
    return true;
  }

  /** Fires the earliest timer due by `limit`; false when there is none. */
  private fireNext(limit: number, fired: number): boolean {
    const next = this.nextDue(limit);
    if (!next) return false;
    if (fired >= MAX_FIRES_PER_ADVANCE) throw new Error(`more than ${MAX_FIRES_PER_ADVANCE} timers fired in one advance`);
    this.timers.delete(next.seq);
    this.current = next.due;
    next.fn();
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

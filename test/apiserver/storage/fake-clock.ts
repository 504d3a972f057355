// A clock for tests: time moves only when the test advances it, and due timers fire in time order.
import type { Clock } from "../../../src/apiserver/storage/clock.js";

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: Timer[] = [];

  constructor(start = Date.UTC(2030, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.#nextId++, at: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** Pending timers, for asserting that nothing was left scheduled. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves time forward, firing every timer that falls due (including ones scheduled while advancing). */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.fn();
    }
    this.#now = until;
  }
}

// A fixed-capacity ring of recent events in revision order; it pins what it holds so their decoded form is kept.
import type { RingEvent } from "./cached-object.js";

export class EventRing {
  readonly capacity: number;
  readonly #slots: Array<RingEvent | undefined>;
  #start = 0;
  #size = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#slots = new Array<RingEvent | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Appends an event; returns the evicted oldest one when the ring was full. */
  push(event: RingEvent): RingEvent | undefined {
    event.pin();
    let evicted: RingEvent | undefined;
    if (this.#size === this.capacity) {
      evicted = this.#slots[this.#start];
      evicted?.unpin();
      this.#slots[this.#start] = event;
      this.#start = (this.#start + 1) % this.capacity;
    } else {
      this.#slots[(this.#start + this.#size) % this.capacity] = event;
      this.#size++;
    }
    return evicted;
  }

  /** Events with revision > `after`, oldest first. */
  since(after: number): RingEvent[] {
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#at(mid).revision <= after) lo = mid + 1;
      else hi = mid;
    }
    const out: RingEvent[] = [];
    for (let i = lo; i < this.#size; i++) out.push(this.#at(i));
    return out;
  }

  clear(): void {
    for (let i = 0; i < this.#size; i++) this.#at(i).unpin();
    this.#slots.fill(undefined);
    this.#start = 0;
    this.#size = 0;
  }

  #at(i: number): RingEvent {
    return this.#slots[(this.#start + i) % this.capacity]!;
  }
}

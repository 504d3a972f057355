// The recorder's small in-memory structures: a least-recently-used map for series and rate limits, a queue for writers.

/** A Map kept in use order, dropping the least recently used entry past `size`. */
export class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly size: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.size) this.map.delete(this.map.keys().next().value!);
  }
}

/** A FIFO with O(1) take (Array#shift copies the array once it is large). */
export class Fifo<V> {
  private items: (V | undefined)[] = [];
  private head = 0;
  get size(): number {
    return this.items.length - this.head;
  }
  push(v: V): void {
    this.items.push(v);
  }
  /** Puts `v` first in line (a write that must be tried again before anything queued after it). */
  unshift(v: V): void {
    if (this.head > 0) this.items[--this.head] = v;
    else this.items.unshift(v);
  }
  take(): V | undefined {
    if (this.head >= this.items.length) return undefined;
    const v = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return v;
  }
}

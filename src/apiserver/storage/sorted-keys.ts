// A sorted array of keys kept in order on insert/remove, so ranged lists need no sort (a splice is a memmove).

export class SortedKeys {
  readonly #keys: string[] = [];

  get size(): number {
    return this.#keys.length;
  }

  /** Index of the first key ≥ `key` (or > `key` when `after`). */
  lowerBound(key: string, after = false): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k = this.#keys[mid]!;
      if (k < key || (after && k === key)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(key: string): void {
    const i = this.lowerBound(key);
    if (this.#keys[i] !== key) this.#keys.splice(i, 0, key);
  }

  remove(key: string): void {
    const i = this.lowerBound(key);
    if (this.#keys[i] === key) this.#keys.splice(i, 1);
  }

  clear(): void {
    this.#keys.length = 0;
  }

  at(index: number): string | undefined {
    return this.#keys[index];
  }

  /** Keys in [from, end) strictly after `startAfter`, as array positions [first, last). */
  range(from: string, end: string, startAfter?: string): [number, number] {
    const first = startAfter !== undefined && startAfter >= from ? this.lowerBound(startAfter, true) : this.lowerBound(from);
    return [first, Math.max(first, this.lowerBound(end))];
  }
}

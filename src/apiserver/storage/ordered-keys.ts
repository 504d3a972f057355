// An ordered set of keys as a counted B+tree: insert, remove and rank in O(log n), iteration in key order from any
// key, so neither a write nor a list page costs time in proportion to the number of keys held.

/** Keys per leaf and children per inner node at most; a node below a quarter of this is merged with a neighbour. */
const MAX = 64;
const MIN = MAX >> 2;

class Leaf {
  keys: string[];
  /** The next leaf in key order (iteration walks leaves without going back up the tree). */
  next: Leaf | undefined;
  constructor(keys: string[], next?: Leaf) {
    this.keys = keys;
    this.next = next;
  }
  get size(): number {
    return this.keys.length;
  }
  get width(): number {
    return this.keys.length;
  }
  get first(): string | undefined {
    return this.keys[0];
  }
}

class Inner {
  children: Node[];
  /** mins[i] is the smallest key under children[i]. */
  mins: string[];
  /** Keys in the whole subtree (for rank). */
  size: number;
  constructor(children: Node[]) {
    this.children = children;
    this.mins = children.map((c) => c.first!);
    this.size = children.reduce((n, c) => n + c.size, 0);
  }
  get width(): number {
    return this.children.length;
  }
  get first(): string | undefined {
    return this.mins[0];
  }
}

type Node = Leaf | Inner;

/** Index of the first key ≥ `key` (> `key` when `after`) in a sorted array. */
function bound(keys: readonly string[], key: string, after: boolean): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const k = keys[mid]!;
    if (k < key || (after && k === key)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The child of an inner node whose range holds `key`: the last one whose smallest key is ≤ `key` (else the first). */
function childFor(node: Inner, key: string): number {
  return Math.max(0, bound(node.mins, key, true) - 1);
}

/** Splits a node that outgrew MAX into two halves; returns the right half. */
function split(node: Node): Node {
  if (node instanceof Leaf) {
    const right = new Leaf(node.keys.splice(node.keys.length >> 1), node.next);
    node.next = right;
    return right;
  }
  const right = new Inner(node.children.splice(node.children.length >> 1));
  node.mins.length = node.children.length;
  node.size -= right.size;
  return right;
}

/** Splits child `i` of `node` in two when it outgrew MAX. */
function splitChildIfFull(node: Inner, i: number): void {
  if (node.children[i]!.width <= MAX) return;
  const right = split(node.children[i]!);
  node.children.splice(i + 1, 0, right);
  node.mins.splice(i + 1, 0, right.first!);
}

/** Moves everything of `right` (the next sibling of `left`) into `left`. */
function merge(left: Node, right: Node): void {
  if (left instanceof Leaf) {
    const r = right as Leaf;
    left.keys = left.keys.concat(r.keys);
    left.next = r.next;
    return;
  }
  const r = right as Inner;
  left.children = left.children.concat(r.children);
  left.mins = left.mins.concat(r.mins);
  left.size += r.size;
}

export class OrderedKeys {
  #root: Node = new Leaf([]);

  get size(): number {
    return this.#root.size;
  }

  has(key: string): boolean {
    const leaf = this.#leafFor(key);
    return leaf.keys[bound(leaf.keys, key, false)] === key;
  }

  /** Adds `key`; false when it was already there. */
  insert(key: string): boolean {
    if (!this.#insert(this.#root, key)) return false;
    if (this.#root.width > MAX) this.#root = new Inner([this.#root, split(this.#root)]);
    return true;
  }

  /** Removes `key`; false when it was not there. */
  remove(key: string): boolean {
    if (!this.#remove(this.#root, key)) return false;
    while (this.#root instanceof Inner && this.#root.children.length === 1) this.#root = this.#root.children[0]!;
    return true;
  }

  clear(): void {
    this.#root = new Leaf([]);
  }

  /** Number of keys < `key` (≤ `key` when `after`). */
  rank(key: string, after = false): number {
    let node = this.#root;
    let n = 0;
    while (node instanceof Inner) {
      const i = childFor(node, key);
      for (let c = 0; c < i; c++) n += node.children[c]!.size;
      node = node.children[i]!;
    }
    return n + bound(node.keys, key, after);
  }

  /** Number of keys in [from, end). */
  count(from: string, end: string, after = false): number {
    return end <= from ? 0 : Math.max(0, this.rank(end) - this.rank(from, after));
  }

  /** Keys ≥ `from` (> `from` when `after`) in ascending order; the set must not change while iterating. */
  *from(from: string, after = false): IterableIterator<string> {
    let leaf: Leaf | undefined = this.#leafFor(from);
    let i = bound(leaf.keys, from, after);
    for (; leaf; leaf = leaf.next, i = 0) {
      const keys = leaf.keys;
      for (; i < keys.length; i++) yield keys[i]!;
    }
  }

  #leafFor(key: string): Leaf {
    let node = this.#root;
    while (node instanceof Inner) node = node.children[childFor(node, key)]!;
    return node;
  }

  #insert(node: Node, key: string): boolean {
    if (node instanceof Leaf) {
      const i = bound(node.keys, key, false);
      if (node.keys[i] === key) return false;
      node.keys.splice(i, 0, key);
      return true;
    }
    const i = childFor(node, key);
    const child = node.children[i]!;
    if (!this.#insert(child, key)) return false;
    node.size++;
    node.mins[i] = child.first!;
    splitChildIfFull(node, i);
    return true;
  }

  #remove(node: Node, key: string): boolean {
    if (node instanceof Leaf) {
      const i = bound(node.keys, key, false);
      if (node.keys[i] !== key) return false;
      node.keys.splice(i, 1);
      return true;
    }
    const i = childFor(node, key);
    const child = node.children[i]!;
    if (!this.#remove(child, key)) return false;
    node.size--;
    if (child.width >= MIN || node.children.length === 1) {
      if (child.width > 0) node.mins[i] = child.first!;
      return true;
    }
    // Too small: merge with a neighbour (the left one when there is one), and split again if that overflows.
    const l = i > 0 ? i - 1 : i;
    const left = node.children[l]!;
    merge(left, node.children[l + 1]!);
    node.children.splice(l + 1, 1);
    node.mins.splice(l + 1, 1);
    node.mins[l] = left.first!;
    splitChildIfFull(node, l);
    return true;
  }
}

// Field sets in upstream's FieldsV1 encoding (`f:name`, `k:{...}`, `v:value`, `i:n`, `.`): a trie with set operations.

/**
 * One node of a field set. Children are keyed by their encoded path element (`f:spec`, `k:{"name":"a"}`, `v:"x"`);
 * `member` says the path itself is in the set (written `.` when the node also has children, as upstream does).
 */
export class FieldSet {
  member = false;
  readonly children = new Map<string, FieldSet>();

  get empty(): boolean {
    return !this.member && this.children.size === 0;
  }

  child(element: string): FieldSet | undefined {
    return this.children.get(element);
  }

  /** The node at `element`, created when absent. */
  descend(element: string): FieldSet {
    let c = this.children.get(element);
    if (c === undefined) this.children.set(element, (c = new FieldSet()));
    return c;
  }

  insert(path: readonly string[]): void {
    let node: FieldSet = this;
    for (const e of path) node = node.descend(e);
    node.member = true;
  }

  has(path: readonly string[]): boolean {
    let node: FieldSet | undefined = this;
    for (const e of path) node = node?.children.get(e);
    return node?.member === true;
  }

  // Sets are not changed once built (only while a walk or a decode builds them), so results share the subtrees
  // they take over unchanged instead of copying them: a write's managers keep most of what they own.
  union(other: FieldSet): FieldSet {
    if (other.empty) return this;
    if (this.empty) return other;
    const out = new FieldSet();
    out.member = this.member || other.member;
    for (const [e, c] of this.children) {
      const o = other.children.get(e);
      out.children.set(e, o === undefined ? c : c.union(o));
    }
    for (const [e, o] of other.children) if (!this.children.has(e)) out.children.set(e, o);
    return out;
  }

  /** The paths of this set not in `other` (membership by path: a member of `other` removes only that path). */
  difference(other: FieldSet): FieldSet {
    if (other.empty) return this;
    const out = new FieldSet();
    out.member = this.member && !other.member;
    let changed = out.member !== this.member;
    for (const [e, c] of this.children) {
      const o = other.children.get(e);
      const d = o === undefined ? c : c.difference(o);
      if (d !== c) changed = true;
      if (!d.empty) out.children.set(e, d);
    }
    return changed ? out : this;
  }

  intersection(other: FieldSet): FieldSet {
    const out = new FieldSet();
    out.member = this.member && other.member;
    for (const [e, c] of this.children) {
      const o = other.children.get(e);
      if (o === undefined) continue;
      const i = c.intersection(o);
      if (!i.empty) out.children.set(e, i);
    }
    return out;
  }

  equals(other: FieldSet): boolean {
    if (this.member !== other.member || this.children.size !== other.children.size) return false;
    for (const [e, c] of this.children) {
      const o = other.children.get(e);
      if (o === undefined || !c.equals(o)) return false;
    }
    return true;
  }

  /** Every member path, in the encoding's order. */
  paths(prefix: readonly string[] = []): string[][] {
    const out: string[][] = this.member ? [[...prefix]] : [];
    for (const e of sortedElements(this.children.keys())) out.push(...this.children.get(e)!.paths([...prefix, e]));
    return out;
  }

  /**
   * The FieldsV1 JSON value: `{}` for a leaf member; a member with children writes `.` after them, elements in
   * upstream's order, so the bytes are upstream's.
   */
  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const e of sortedElements(this.children.keys())) out[e] = this.children.get(e)!.toJSON();
    if (this.member && this.children.size > 0) out["."] = {};
    return out;
  }

  /** Reads a FieldsV1 value; anything that is not one is refused (the caller decides what that means). */
  static fromJSON(value: unknown): FieldSet {
    const out = new FieldSet();
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("a FieldsV1 value must be an object");
    const fields = value as Record<string, unknown>;
    for (const k in fields) {
      if (!Object.hasOwn(fields, k)) continue;
      if (k === ".") out.member = true;
      else if (k[1] === ":" && ELEMENT_KINDS.includes(k[0]!)) {
        const c = FieldSet.fromJSON(fields[k]);
        if (c.children.size === 0) c.member = true;
        out.children.set(k, c);
      } else throw new Error(`unknown FieldsV1 element ${JSON.stringify(k)}`);
    }
    return out;
  }
}

/** The first letters of path elements: field, key, value, index. */
const ELEMENT_KINDS = "fkvi";

const ORDER: Readonly<Record<string, number>> = { f: 0, k: 1, v: 2, i: 3 };

/**
 * Upstream's element order: field names, then keys, then values, then indices. Names compare as strings, indices as
 * numbers, keys field by field (name, then value), values by value (numbers as numbers).
 */
export function sortedElements(elements: Iterable<string>): string[] {
  return sortInPlace([...elements], compareElements);
}

/**
 * Sorts `items` in place, as `Array.prototype.sort` orders them (stable). The arrays here are an object level's
 * names or a trie node's elements — a handful — and V8's sort allocates its state and work arrays on every call
 * (a measurable share of a write's garbage), so short arrays take an insertion sort that allocates nothing.
 */
export function sortInPlace<T>(items: T[], compare: (a: T, b: T) => number = defaultOrder): T[] {
  if (items.length > 24) return items.sort(compare);
  for (let i = 1; i < items.length; i++) {
    const item = items[i]!;
    let j = i - 1;
    for (; j >= 0 && compare(items[j]!, item) > 0; j--) items[j + 1] = items[j]!;
    items[j + 1] = item;
  }
  return items;
}

/** The default sort's order, for the strings sorted here: by UTF-16 code units. */
const defaultOrder = (a: unknown, b: unknown): number => {
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
};

function compareElements(a: string, b: string): number {
  const d = (ORDER[a[0]!] ?? 9) - (ORDER[b[0]!] ?? 9);
  if (d !== 0) return d;
  switch (a[0]) {
    case "i":
      return Number(a.slice(2)) - Number(b.slice(2));
    case "k":
      return compareKeys(JSON.parse(a.slice(2)) as Record<string, unknown>, JSON.parse(b.slice(2)) as Record<string, unknown>);
    case "v":
      return compareValues(JSON.parse(a.slice(2)), JSON.parse(b.slice(2)));
    default:
      return compareValues(a, b);
  }
}

function compareKeys(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const x = Object.entries(a);
  const y = Object.entries(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = compareValues(x[i]![0], y[i]![0]) || compareValues(x[i]![1], y[i]![1]);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const [x, y] = typeof a === "string" && typeof b === "string" ? [a, b] : [JSON.stringify(a), JSON.stringify(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

export const fieldElement = (name: string): string => `f:${name}`;

/** `k:{"name":"a"}`: the key fields of a map-list item, sorted by name, values as compact JSON. */
export function keyElement(item: Record<string, unknown>, keys: readonly string[]): string {
  const fields: Record<string, unknown> = {};
  for (const k of [...keys].sort()) if (item[k] !== undefined && item[k] !== null) fields[k] = item[k];
  return `k:${JSON.stringify(fields)}`;
}

export const valueElement = (value: unknown): string => `v:${JSON.stringify(value)}`;

/** A path as upstream prints it in conflicts: `.spec.x`, `[name="a"]`, `[="v"]`, `[0]`. */
export function pathString(path: readonly string[]): string {
  return path
    .map((e) => {
      const body = e.slice(2);
      switch (e[0]) {
        case "f":
          return `.${body}`;
        case "k": {
          const fields = JSON.parse(body) as Record<string, unknown>;
          return `[${Object.entries(fields).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(",")}]`;
        }
        case "v":
          return `[=${body}]`;
        default:
          return `[${body}]`;
      }
    })
    .join("");
}

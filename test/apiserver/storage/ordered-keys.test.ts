// The counted B+tree of keys against a plain sorted array: same membership, order, ranks and ranged iteration.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OrderedKeys } from "../../../src/apiserver/storage/ordered-keys.js";

/** The model: a sorted array with the obvious O(n) operations. */
class Model {
  keys: string[] = [];
  insert(key: string): boolean {
    if (this.keys.includes(key)) return false;
    this.keys.push(key);
    this.keys.sort();
    return true;
  }
  remove(key: string): boolean {
    const i = this.keys.indexOf(key);
    if (i < 0) return false;
    this.keys.splice(i, 1);
    return true;
  }
  rank(key: string, after: boolean): number {
    return this.keys.filter((k) => k < key || (after && k === key)).length;
  }
  from(key: string, after: boolean): string[] {
    return this.keys.filter((k) => k > key || (!after && k === key));
  }
}

const take = (it: Iterable<string>, n: number): string[] => {
  const out: string[] = [];
  for (const k of it) {
    if (out.length >= n) break;
    out.push(k);
  }
  return out;
};

/** Short keys over a small alphabet, so inserts collide with present keys and removes hit. */
const key = fc.string({ unit: fc.constantFrom("a", "b", "c", "/", "z"), maxLength: 6 });
const op = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("insert" as const), key }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("remove" as const), key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("probe" as const), key, after: fc.boolean(), n: fc.nat(80) }) },
);

function check(tree: OrderedKeys, model: Model, probe: string): void {
  expect(tree.size).toBe(model.keys.length);
  expect([...tree.from("")]).toEqual(model.keys);
  for (const after of [false, true]) {
    expect(tree.rank(probe, after)).toBe(model.rank(probe, after));
    expect([...tree.from(probe, after)]).toEqual(model.from(probe, after));
  }
}

describe("OrderedKeys", () => {
  it("behaves like a sorted array under any sequence of inserts, removes and probes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 600 }), (ops) => {
        const tree = new OrderedKeys();
        const model = new Model();
        for (const o of ops) {
          if (o.kind === "insert") expect(tree.insert(o.key)).toBe(model.insert(o.key));
          else if (o.kind === "remove") expect(tree.remove(o.key)).toBe(model.remove(o.key));
          else {
            expect(tree.has(o.key)).toBe(model.keys.includes(o.key));
            expect(tree.rank(o.key, o.after)).toBe(model.rank(o.key, o.after));
            expect(take(tree.from(o.key, o.after), o.n)).toEqual(model.from(o.key, o.after).slice(0, o.n));
          }
        }
        check(tree, model, ops[0]?.key ?? "");
      }),
      { numRuns: 300 },
    );
  });

  it("stays exact through growth to several levels and shrinking back to empty", () => {
    // Deterministic pseudo-random order (a fixed LCG) so a failure reproduces.
    let seed = 12345;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const tree = new OrderedKeys();
    const model = new Set<string>();
    const keys = Array.from({ length: 20_000 }, () => `/k/${String(next() % 50_000).padStart(6, "0")}`);
    for (const k of keys) expect(tree.insert(k)).toBe(!model.has(k) && (model.add(k), true));
    const sorted = [...model].sort();
    expect(tree.size).toBe(sorted.length);
    expect([...tree.from("")]).toEqual(sorted);
    for (const probe of ["/k/000000", "/k/012345", "/k/049999", "/k/1", "/j", "/l"]) {
      const m = new Model();
      m.keys = sorted;
      expect(tree.rank(probe)).toBe(m.rank(probe, false));
      expect(tree.count(probe, "/k/030000")).toBe(sorted.filter((k) => k >= probe && k < "/k/030000").length);
    }
    // Remove in a different order, checking the order and a rank at intervals.
    const removal = [...model].sort((a, b) => (a.slice(-3) < b.slice(-3) ? -1 : a.slice(-3) > b.slice(-3) ? 1 : a < b ? -1 : 1));
    removal.forEach((k, i) => {
      expect(tree.remove(k)).toBe(true);
      model.delete(k);
      if (i % 997 === 0) {
        const left = [...model].sort();
        expect([...tree.from("")]).toEqual(left);
        expect(tree.rank("/k/025000")).toBe(left.filter((x) => x < "/k/025000").length);
      }
    });
    expect(tree.size).toBe(0);
    expect([...tree.from("")]).toEqual([]);
    expect(tree.remove("/k/000001")).toBe(false);
  });

  it("counts a range and iterates from a key in the middle of a leaf", () => {
    const tree = new OrderedKeys();
    for (let i = 0; i < 1000; i++) tree.insert(`/p/${String(i).padStart(4, "0")}`);
    tree.insert("/q/x");
    expect(tree.count("/p/", "/p0")).toBe(1000);
    expect(tree.count("/p/0500", "/p0", true)).toBe(499);
    expect(tree.count("/q/", "/p/")).toBe(0);
    expect(take(tree.from("/p/0499", true), 3)).toEqual(["/p/0500", "/p/0501", "/p/0502"]);
    expect(take(tree.from("/p/9"), 2)).toEqual(["/q/x"]);
    tree.clear();
    expect(tree.size).toBe(0);
    expect(tree.has("/q/x")).toBe(false);
  });
});

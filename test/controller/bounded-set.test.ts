// BoundedSet: a set that forgets its oldest members beyond its limit.
import { describe, expect, it } from "vitest";
import { BoundedSet } from "../../src/controller/bounded-set.js";

describe("BoundedSet", () => {
  it("keeps the newest `limit` members and forgets the oldest first", () => {
    const s = new BoundedSet<string>(3);
    for (const x of ["a", "b", "c", "a", "d"]) s.add(x);
    expect(["a", "b", "c", "d"].filter((x) => s.has(x))).toEqual(["b", "c", "d"]);
    expect(s.size).toBe(3);
    s.add("e");
    expect(["b", "c", "d", "e"].filter((x) => s.has(x))).toEqual(["c", "d", "e"]);
  });

  it("forgets a deleted member, and never holds more than its limit", () => {
    const s = new BoundedSet<number>(2);
    s.add(1);
    s.delete(1);
    expect(s.has(1)).toBe(false);
    for (let i = 0; i < 100; i++) s.add(i);
    expect(s.size).toBe(2);
    expect([s.has(98), s.has(99)]).toEqual([true, true]);
    expect(() => new BoundedSet(0)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });
});

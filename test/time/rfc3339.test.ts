// RFC 3339 timestamps at seconds precision; the formatted second is reused, never a stale one.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rfc3339 } from "../../src/time/rfc3339.js";

describe("rfc3339", () => {
  it("drops the milliseconds, within one second and across seconds, in any order", () => {
    expect(rfc3339(new Date(Date.UTC(2030, 0, 1, 12, 0, 0, 999)))).toBe("2030-01-01T12:00:00Z");
    expect(rfc3339(new Date(Date.UTC(2030, 0, 1, 12, 0, 0, 1)))).toBe("2030-01-01T12:00:00Z");
    expect(rfc3339(new Date(Date.UTC(2030, 0, 1, 12, 0, 1, 0)))).toBe("2030-01-01T12:00:01Z");
    expect(rfc3339(new Date(Date.UTC(2029, 11, 31, 23, 59, 59, 500)))).toBe("2029-12-31T23:59:59Z");
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4_102_444_800_000 }), { minLength: 1, maxLength: 20 }), (times) => {
        for (const t of times) expect(rfc3339(new Date(t))).toBe(new Date(t - (t % 1000)).toISOString().slice(0, 19) + "Z");
      }),
    );
  });

  it("still refuses an invalid date", () => {
    expect(() => rfc3339(new Date(Number.NaN))).toThrow(RangeError);
  });
});

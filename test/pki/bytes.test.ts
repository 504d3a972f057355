import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allocBytes, copyBytes } from "../../src/pki/bytes.js";

describe("slab byte arrays", () => {
  it("hands out zero-filled arrays that never overlap, across slab boundaries", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 200 }), (sizes) => {
        const arrays = sizes.map((n, i) => {
          const a = allocBytes(n);
          expect(a.length).toBe(n);
          expect(a.every((b) => b === 0)).toBe(true);
          a.fill((i % 255) + 1);
          return a;
        });
        // Every array still holds its own fill: no later allocation wrote into it.
        arrays.forEach((a, i) => expect(a.every((b) => b === (i % 255) + 1)).toBe(true));
      }),
      { numRuns: 50 },
    );
  });

  it("gives large arrays their own buffer and small ones a shared, aligned slab", () => {
    const big = allocBytes(4097);
    expect(big.byteOffset).toBe(0);
    expect(big.buffer.byteLength).toBe(4097);
    const a = allocBytes(10);
    const b = allocBytes(10);
    if (a.buffer === b.buffer) expect(b.byteOffset - a.byteOffset).toBe(16);
    expect(b.byteOffset % 8).toBe(0);
  });

  it("copies independently of the source", () => {
    const source = Uint8Array.of(1, 2, 3);
    const copy = copyBytes(source);
    source[0] = 9;
    expect([...copy]).toEqual([1, 2, 3]);
  });
});

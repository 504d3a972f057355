// Mutations of DER bytes for property tests: bit flips, cuts, insertions, deletions, and changed lengths and tags at
// real element headers.
import fc from "fast-check";

/** Offsets of every TLV header in a DER tree, so that length mutations hit real length bytes. */
export function headerOffsets(der: Uint8Array): number[] {
  const out: number[] = [];
  const walk = (start: number, end: number): void => {
    let p = start;
    while (p + 1 < end) {
      out.push(p);
      const first = der[p + 1]!;
      const n = first < 0x80 ? 0 : first & 0x7f;
      let len = first < 0x80 ? first : 0;
      for (let i = 0; i < n; i++) len = len * 256 + der[p + 2 + i]!;
      const body = p + 2 + n;
      if ((der[p]! & 0x20) !== 0 || der[p] === 0x03 || der[p] === 0x04) walk(der[p] === 0x03 ? body + 1 : body, Math.min(body + len, end));
      p = body + len;
    }
  };
  walk(0, der.length);
  return out;
}

export type Mutation = (der: Uint8Array) => Uint8Array;

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }).map(({ at, bit }) => (d: Uint8Array) => {
    const out = d.slice();
    out[at % out.length]! ^= 1 << bit;
    return out;
  }),
  fc.nat().map((n) => (d: Uint8Array) => d.slice(0, n % d.length)),
  fc.record({ at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }).map(({ at, bytes }) => (d: Uint8Array) => {
    const i = at % (d.length + 1);
    return Uint8Array.from([...d.subarray(0, i), ...bytes, ...d.subarray(i)]);
  }),
  fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }).map(({ at, count }) => (d: Uint8Array) => {
    const i = at % d.length;
    return Uint8Array.from([...d.subarray(0, i), ...d.subarray(i + count)]);
  }),
  fc.record({ pick: fc.nat(), value: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x80, 0x81, 0x82, 0x84, 0x85, 0xff)), delta: fc.constantFrom(-1, 1, 0) }).map(
    ({ pick, value, delta }) =>
      (d: Uint8Array) => {
        const headers = headerOffsets(d);
        const at = headers[pick % headers.length]! + 1;
        const out = d.slice();
        out[at] = delta === 0 ? value : (out[at]! + delta) & 0xff;
        return out;
      },
  ),
  fc.record({ at: fc.nat(), tag: fc.integer({ min: 0, max: 255 }) }).map(({ at, tag }) => (d: Uint8Array) => {
    const headers = headerOffsets(d);
    const out = d.slice();
    out[headers[at % headers.length]!] = tag;
    return out;
  }),
  fc.record({ at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }).map(({ at, bytes }) => (d: Uint8Array) => {
    const out = d.slice();
    out.set(bytes.subarray(0, Math.max(0, out.length - (at % out.length))), at % out.length);
    return out;
  }),
);

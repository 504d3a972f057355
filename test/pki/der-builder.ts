// Tiny DER builder for tests: hand-made structures that the real encoders would never produce.
type Part = Uint8Array | readonly number[];

export function concat(...parts: Part[]): Uint8Array {
  const arrays = parts.map((p) => (p instanceof Uint8Array ? p : Uint8Array.from(p)));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

export function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

export function tlv(tag: number, ...contents: Part[]): Uint8Array {
  const body = concat(...contents);
  return concat([tag], lengthBytes(body.length), body);
}

export const seq = (...c: Part[]): Uint8Array => tlv(0x30, ...c);
export const set = (...c: Part[]): Uint8Array => tlv(0x31, ...c);
export const octets = (...c: Part[]): Uint8Array => tlv(0x04, ...c);
export const bits = (...c: Part[]): Uint8Array => tlv(0x03, [0], ...c);
export const nul = (): Uint8Array => Uint8Array.from([0x05, 0x00]);
export const bool = (v: boolean): Uint8Array => Uint8Array.from([0x01, 0x01, v ? 0xff : 0x00]);
export const ctx = (n: number, constructed: boolean, ...c: Part[]): Uint8Array => tlv((constructed ? 0xa0 : 0x80) | n, ...c);
export const str = (tag: number, s: string): Uint8Array => tlv(tag, new TextEncoder().encode(s));
export const utf8 = (s: string): Uint8Array => str(0x0c, s);

export function int(v: number | bigint): Uint8Array {
  let n = BigInt(v);
  const bytes: number[] = [];
  do {
    bytes.unshift(Number(n & 0xffn));
    n >>= 8n;
  } while (n !== 0n && n !== -1n);
  if (v >= 0 && bytes[0]! >= 0x80) bytes.unshift(0);
  if (v < 0 && bytes[0]! < 0x80) bytes.unshift(0xff);
  return tlv(0x02, bytes);
}

export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map((a) => BigInt(a));
  const subs = [arcs[0]! * 40n + arcs[1]!, ...arcs.slice(2)];
  const out: number[] = [];
  for (const sub of subs) {
    const chunk: number[] = [Number(sub & 0x7fn)];
    for (let v = sub >> 7n; v > 0n; v >>= 7n) chunk.unshift(Number(v & 0x7fn) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, out);
}

/** Name ::= SEQUENCE OF SET OF { type, value }: each inner array is one RDN of [oid, encoded value] pairs. */
export function name(...rdns: (readonly [string, Uint8Array])[][]): Uint8Array {
  return seq(...rdns.map((rdn) => set(...rdn.map(([type, value]) => seq(oid(type), value)))));
}

export const hex = (h: string): Uint8Array => Uint8Array.from(Buffer.from(h.replace(/\s+/g, ""), "hex"));

// Minimal DER encoder: the universal types X.509 issuance needs, as plain byte arrays.
//
// Hand-written on purpose. Issuance assembles a few hundred bytes per certificate, most of them constant per
// CA (version, algorithm, issuer, AuthorityKeyIdentifier); encoding those once and concatenating byte arrays
// costs a few microseconds per certificate, while building asn1js/@peculiar/x509 object trees for every
// certificate (the generic generator path) was measured at ~660 certificates/s for the whole issuance.
import { PlatformError } from "../errors.js";
import { Tag } from "./der.js";
import { allocBytes } from "./bytes.js";


/** DER NULL (05 00). */
export const DER_NULL: Uint8Array = Uint8Array.of(Tag.NULL, 0);

/** Definite length octets: short form below 128, long form (minimal) above. */
export function encodeLength(length: number): Uint8Array {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new PlatformError("INVALID_ARGUMENT", `DER length must be a non-negative integer, got ${length}`);
  }
  if (length < 0x80) return Uint8Array.of(length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Uint8Array.of(0x80 | bytes.length, ...bytes);
}

/** Concatenates byte arrays into one new array. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Octets of the tag and length of a value of `length` octets. */
export function headerLength(length: number): number {
  return length < 0x80 ? 2 : length < 0x100 ? 3 : length < 0x10000 ? 4 : 1 + encodeLength(length).length;
}

/** Writes tag and length at `at`; returns the offset of the value. */
export function writeHeader(out: Uint8Array, at: number, tag: number, length: number): number {
  out[at++] = tag;
  if (length < 0x80) {
    out[at++] = length;
  } else if (length < 0x100) {
    out[at++] = 0x81;
    out[at++] = length;
  } else if (length < 0x10000) {
    out[at++] = 0x82;
    out[at++] = length >> 8;
    out[at++] = length & 0xff;
  } else {
    const encoded = encodeLength(length);
    out.set(encoded, at);
    at += encoded.length;
  }
  return at;
}

/** Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue BIT STRING }, in one buffer. */
export function assembleCertificate(tbs: Uint8Array, algorithmDer: Uint8Array, signature: Uint8Array): Uint8Array {
  const bitsLength = signature.length + 1;
  const length = tbs.length + algorithmDer.length + headerLength(bitsLength) + bitsLength;
  const out = allocBytes(headerLength(length) + length);
  let at = writeHeader(out, 0, Tag.SEQUENCE, length);
  out.set(tbs, at);
  at += tbs.length;
  out.set(algorithmDer, at);
  at += algorithmDer.length;
  at = writeHeader(out, at, Tag.BIT_STRING, bitsLength);
  out[at++] = 0; // no unused bits
  out.set(signature, at);
  return out;
}

/** One tag-length-value; `contents` are concatenated into the value. */
export function tlv(tag: number, ...contents: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const c of contents) length += c.length;
  // Short and two-byte lengths cover every certificate part; encodeLength handles the rest.
  const out = allocBytes(headerLength(length) + length);
  let at = writeHeader(out, 0, tag, length);
  for (const c of contents) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export function sequence(...parts: readonly Uint8Array[]): Uint8Array {
  return tlv(Tag.SEQUENCE, ...parts);
}

/** SET OF: DER orders the elements by their encodings. */
export function setOf(...parts: readonly Uint8Array[]): Uint8Array {
  return tlv(Tag.SET, ...[...parts].sort(compareBytes));
}

/** [n] EXPLICIT: a constructed context-specific wrapper. */
export function explicit(tagNumber: number, ...parts: readonly Uint8Array[]): Uint8Array {
  return tlv(0xa0 | checkTagNumber(tagNumber), ...parts);
}

/** [n] IMPLICIT over a primitive value (e.g. AuthorityKeyIdentifier.keyIdentifier). */
export function implicitPrimitive(tagNumber: number, content: Uint8Array): Uint8Array {
  return tlv(0x80 | checkTagNumber(tagNumber), content);
}

function checkTagNumber(n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 30) {
    throw new PlatformError("INVALID_ARGUMENT", `context tag number must be 0..30, got ${n}`);
  }
  return n;
}

export function boolean(value: boolean): Uint8Array {
  return Uint8Array.of(Tag.BOOLEAN, 1, value ? 0xff : 0x00);
}

/** INTEGER from a non-negative number, bigint, or unsigned big-endian magnitude bytes. */
export function integer(value: number | bigint | Uint8Array): Uint8Array {
  return tlv(Tag.INTEGER, unsignedIntegerContent(value));
}

function unsignedIntegerContent(value: number | bigint | Uint8Array): Uint8Array {
  let magnitude: Uint8Array;
  if (value instanceof Uint8Array) {
    magnitude = value;
  } else {
    if ((typeof value === "number" && !Number.isSafeInteger(value)) || value < 0) {
      throw new PlatformError("INVALID_ARGUMENT", `DER INTEGER must be a non-negative integer, got ${value}`);
    }
    let hex = BigInt(value).toString(16);
    if (hex.length % 2 === 1) hex = `0${hex}`;
    magnitude = Uint8Array.from(Buffer.from(hex, "hex"));
  }
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.length === 0 ? Uint8Array.of(0) : magnitude.subarray(start);
  // A set top bit would read as negative: DER adds one zero octet.
  return trimmed[0]! & 0x80 ? concat([Uint8Array.of(0), trimmed]) : trimmed;
}

/** OBJECT IDENTIFIER from dotted text (e.g. 2.5.29.19). */
export function objectIdentifier(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map((a) => (/^(0|[1-9][0-9]*)$/.test(a) ? BigInt(a) : -1n));
  const [first, second] = arcs;
  if (arcs.length < 2 || arcs.some((a) => a < 0n) || first! > 2n || (first! < 2n && second! > 39n)) {
    throw new PlatformError("INVALID_ARGUMENT", `not a valid object identifier: ${JSON.stringify(dotted)}`);
  }
  const bytes: number[] = [];
  for (const arc of [first! * 40n + second!, ...arcs.slice(2)]) {
    const group: number[] = [Number(arc & 0x7fn)];
    for (let rest = arc >> 7n; rest > 0n; rest >>= 7n) group.unshift(Number(rest & 0x7fn) | 0x80);
    bytes.push(...group);
  }
  return tlv(Tag.OID, Uint8Array.from(bytes));
}

export function octetString(bytes: Uint8Array): Uint8Array {
  return tlv(Tag.OCTET_STRING, bytes);
}

/** BIT STRING with the given count of unused bits in the last octet (0 for keys and signatures). */
export function bitString(bytes: Uint8Array, unusedBits = 0): Uint8Array {
  if (!Number.isInteger(unusedBits) || unusedBits < 0 || unusedBits > 7 || (bytes.length === 0 && unusedBits !== 0)) {
    throw new PlatformError("INVALID_ARGUMENT", `BIT STRING unused bits must be 0..7 (0 when empty), got ${unusedBits}`);
  }
  return tlv(Tag.BIT_STRING, Uint8Array.of(unusedBits), bytes);
}

/**
 * A named-bit BIT STRING (KeyUsage): bit i of `mask` is ASN.1 bit i, i.e. 0x80 of the first octet for i = 0.
 * DER drops trailing zero bits, so the encoding is as short as the highest set bit allows.
 */
export function namedBitString(mask: number): Uint8Array {
  if (!Number.isSafeInteger(mask) || mask < 0 || mask > 0xffff) {
    throw new PlatformError("INVALID_ARGUMENT", `named bit mask must be 0..65535, got ${mask}`);
  }
  if (mask === 0) return bitString(new Uint8Array(0));
  const highest = 31 - Math.clz32(mask);
  const bytes = new Uint8Array((highest >> 3) + 1);
  for (let i = 0; i <= highest; i++) if (mask & (1 << i)) bytes[i >> 3]! |= 0x80 >> (i & 7);
  return bitString(bytes, 7 - (highest & 7));
}

const PRINTABLE_RE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

export function utf8String(text: string): Uint8Array {
  return tlv(Tag.UTF8_STRING, new TextEncoder().encode(text));
}

export function printableString(text: string): Uint8Array {
  if (!PRINTABLE_RE.test(text)) {
    throw new PlatformError("INVALID_ARGUMENT", `PrintableString cannot hold ${JSON.stringify(text)}`);
  }
  return tlv(Tag.PRINTABLE_STRING, Buffer.from(text, "latin1"));
}

export function ia5String(text: string): Uint8Array {
  if (!/^[\x00-\x7f]*$/.test(text)) throw new PlatformError("INVALID_ARGUMENT", `IA5String cannot hold ${JSON.stringify(text)}`);
  return tlv(Tag.IA5_STRING, Buffer.from(text, "latin1"));
}

/** UTCTime YYMMDDHHMMSSZ (years 1950–2049); sub-second parts are dropped. */
export function utcTime(date: Date): Uint8Array {
  const year = checkedYear(date);
  if (year < 1950 || year > 2049) throw new PlatformError("INVALID_ARGUMENT", `UTCTime covers 1950–2049, got year ${year}`);
  return tlv(Tag.UTC_TIME, timeDigits(date, 2));
}

/** GeneralizedTime YYYYMMDDHHMMSSZ; sub-second parts are dropped. */
export function generalizedTime(date: Date): Uint8Array {
  checkedYear(date);
  return tlv(Tag.GENERALIZED_TIME, timeDigits(date, 4));
}

/** RFC 5280 Time: UTCTime through 2049, GeneralizedTime from 2050 (and before 1950). */
export function time(date: Date): Uint8Array {
  const year = checkedYear(date);
  return year >= 1950 && year <= 2049 ? utcTime(date) : generalizedTime(date);
}

function checkedYear(date: Date): number {
  const year = date.getUTCFullYear();
  if (Number.isNaN(year) || year < 0 || year > 9999) {
    throw new PlatformError("INVALID_ARGUMENT", `a certificate time needs a year 0..9999, got ${String(date)}`);
  }
  return year;
}

function timeDigits(date: Date, yearDigits: 2 | 4): Uint8Array {
  const two = (n: number) => String(n).padStart(2, "0");
  const year = String(date.getUTCFullYear()).padStart(4, "0").slice(4 - yearDigits);
  const text = `${year}${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}Z`;
  return Buffer.from(text, "latin1");
}

/** Bytewise order, shorter first on a common prefix (the DER SET OF order). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

// DER value decoders (tags, OBJECT IDENTIFIER, string types, times) used by the DER reader; strict DER forms only.
import { Buffer } from "node:buffer";
import { PlatformError } from "../errors.js";

export const Tag = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  NUMERIC_STRING: 0x12,
  PRINTABLE_STRING: 0x13,
  T61_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  VISIBLE_STRING: 0x1a,
  UNIVERSAL_STRING: 0x1c,
  BMP_STRING: 0x1e,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** One element: its tag byte and absolute positions of its start, contents and end. */
export interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly contentStart: number;
  readonly end: number;
}

export function derError(message: string, offset: number): PlatformError {
  return new PlatformError("DER_INVALID", `${message} at offset ${offset}`, { details: { offset } });
}

const TAG_NAMES: Record<number, string> = {
  0x01: "BOOLEAN",
  0x02: "INTEGER",
  0x03: "BIT STRING",
  0x04: "OCTET STRING",
  0x05: "NULL",
  0x06: "OBJECT IDENTIFIER",
  0x0c: "UTF8String",
  0x13: "PrintableString",
  0x16: "IA5String",
  0x17: "UTCTime",
  0x18: "GeneralizedTime",
  0x30: "SEQUENCE",
  0x31: "SET",
};

export function tagName(tag: number): string {
  const known = TAG_NAMES[tag];
  if (known !== undefined) return known;
  if ((tag & 0xc0) === 0x80) return `[${tag & 0x1f}]${tag & 0x20 ? "" : " primitive"}`;
  return `tag 0x${tag.toString(16).padStart(2, "0")}`;
}

// ---- OBJECT IDENTIFIER ----

const OID_CACHE = new Map<string, string>();
const OID_CACHE_LIMIT = 2048;

/** Dotted text of OID contents buf[start, end); results for short OIDs are cached by their bytes. */
export function decodeOid(buf: Uint8Array, start: number, end: number, what = "OBJECT IDENTIFIER"): string {
  const len = end - start;
  if (len === 0) throw derError(`${what}: empty OBJECT IDENTIFIER`, start);
  let key: string | undefined;
  if (len <= 32) {
    key = "";
    for (let i = start; i < end; i++) key += String.fromCharCode(buf[i]!);
    const hit = OID_CACHE.get(key);
    if (hit !== undefined) return hit;
  }
  if (buf[end - 1]! & 0x80) throw derError(`${what}: OBJECT IDENTIFIER ends inside a sub-identifier`, start);
  const arcs: string[] = [];
  let i = start;
  while (i < end) {
    if (buf[i] === 0x80) throw derError(`${what}: OBJECT IDENTIFIER sub-identifier is not minimal`, start);
    let v = 0;
    let big: bigint | undefined;
    for (;;) {
      const b = buf[i++]!;
      if (big !== undefined) big = (big << 7n) | BigInt(b & 0x7f);
      else if (v >= 2 ** 45) big = (BigInt(v) << 7n) | BigInt(b & 0x7f);
      else v = v * 128 + (b & 0x7f);
      if ((b & 0x80) === 0) break;
    }
    if (arcs.length === 0) {
      // The first sub-identifier packs the first two arcs: 40 * first + second.
      if (big !== undefined) arcs.push("2", String(big - 80n));
      else if (v < 40) arcs.push("0", String(v));
      else if (v < 80) arcs.push("1", String(v - 40));
      else arcs.push("2", String(v - 80));
    } else {
      arcs.push(big !== undefined ? String(big) : String(v));
    }
  }
  const text = arcs.join(".");
  if (key !== undefined) {
    if (OID_CACHE.size >= OID_CACHE_LIMIT) OID_CACHE.clear();
    OID_CACHE.set(key, text);
  }
  return text;
}

// ---- strings ----

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const UTF16BE = new TextDecoder("utf-16be", { fatal: true, ignoreBOM: true });

// PrintableString per X.680, plus '*' and '&' which real-world encoders put there (as Go's parser accepts).
function isPrintableChar(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x20 ||
    (c >= 0x27 && c <= 0x29) ||
    (c >= 0x2b && c <= 0x2f) ||
    c === 0x3a ||
    c === 0x3d ||
    c === 0x3f ||
    c === 0x2a ||
    c === 0x26
  );
}

function latin1(buf: Uint8Array, start: number, end: number): string {
  // One string, not a chain of one-character concatenations; a long one (arguments are bounded) through Buffer.
  if (end - start <= 1024) return String.fromCharCode.apply(null, buf.subarray(start, end) as unknown as number[]);
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1");
}

function checkChars(buf: Uint8Array, tlv: Tlv, what: string, ok: (c: number) => boolean, kind: string): void {
  for (let i = tlv.contentStart; i < tlv.end; i++) {
    if (!ok(buf[i]!)) throw derError(`${what}: byte 0x${buf[i]!.toString(16)} is not allowed in a ${kind}`, i);
  }
}

/** Whether `tag` is one of the string types decodeString understands. */
export function isStringTag(tag: number): boolean {
  return (
    tag === Tag.UTF8_STRING ||
    tag === Tag.PRINTABLE_STRING ||
    tag === Tag.IA5_STRING ||
    tag === Tag.T61_STRING ||
    tag === Tag.BMP_STRING ||
    tag === Tag.UNIVERSAL_STRING ||
    tag === Tag.NUMERIC_STRING ||
    tag === Tag.VISIBLE_STRING
  );
}

export function decodeString(buf: Uint8Array, tlv: Tlv, what = "string"): string {
  const { contentStart: s, end: e } = tlv;
  switch (tlv.tag) {
    case Tag.UTF8_STRING: {
      let ascii = true;
      for (let i = s; i < e && ascii; i++) ascii = buf[i]! < 0x80;
      if (ascii) return latin1(buf, s, e);
      try {
        return UTF8.decode(buf.subarray(s, e));
      } catch {
        throw derError(`${what}: UTF8String is not valid UTF-8`, tlv.start);
      }
    }
    case Tag.PRINTABLE_STRING:
      checkChars(buf, tlv, what, isPrintableChar, "PrintableString");
      return latin1(buf, s, e);
    case Tag.IA5_STRING:
      checkChars(buf, tlv, what, (c) => c < 0x80, "IA5String");
      return latin1(buf, s, e);
    case Tag.NUMERIC_STRING:
      checkChars(buf, tlv, what, (c) => c === 0x20 || (c >= 0x30 && c <= 0x39), "NumericString");
      return latin1(buf, s, e);
    case Tag.VISIBLE_STRING:
      checkChars(buf, tlv, what, (c) => c >= 0x20 && c < 0x7f, "VisibleString");
      return latin1(buf, s, e);
    case Tag.T61_STRING:
      // Teletex is read as Latin-1, as OpenSSL and most parsers do.
      return latin1(buf, s, e);
    case Tag.BMP_STRING:
      if ((e - s) % 2 !== 0) throw derError(`${what}: BMPString has an odd length`, tlv.start);
      try {
        return UTF16BE.decode(buf.subarray(s, e));
      } catch {
        throw derError(`${what}: BMPString is not valid UTF-16`, tlv.start);
      }
    case Tag.UNIVERSAL_STRING: {
      if ((e - s) % 4 !== 0) throw derError(`${what}: UniversalString length is not a multiple of 4`, tlv.start);
      let out = "";
      for (let i = s; i < e; i += 4) {
        const cp = ((buf[i]! << 24) | (buf[i + 1]! << 16) | (buf[i + 2]! << 8) | buf[i + 3]!) >>> 0;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) throw derError(`${what}: UniversalString has an invalid code point`, i);
        out += String.fromCodePoint(cp);
      }
      return out;
    }
    default:
      throw derError(`expected ${what} (a string type), found ${tagName(tlv.tag)}`, tlv.start);
  }
}

// ---- time ----

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function digits(buf: Uint8Array, at: number, n: number, tlv: Tlv, what: string): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const c = buf[i]! - 0x30;
    if (c < 0 || c > 9) throw derError(`${what}: time has a non-digit`, tlv.start);
    v = v * 10 + c;
  }
  return v;
}

/** UTCTime (YYMMDDHHMMSSZ) or GeneralizedTime (YYYYMMDDHHMMSS[.fff]Z), DER forms only. */
export function decodeTime(buf: Uint8Array, tlv: Tlv, what = "time"): Date {
  const s = tlv.contentStart;
  const len = tlv.end - s;
  let year: number;
  let p: number;
  if (tlv.tag === Tag.UTC_TIME) {
    if (len !== 13) throw derError(`${what}: UTCTime must be YYMMDDHHMMSSZ`, tlv.start);
    const yy = digits(buf, s, 2, tlv, what);
    year = yy >= 50 ? 1900 + yy : 2000 + yy;
    p = s + 2;
  } else if (tlv.tag === Tag.GENERALIZED_TIME) {
    if (len < 15) throw derError(`${what}: GeneralizedTime must be YYYYMMDDHHMMSSZ`, tlv.start);
    year = digits(buf, s, 4, tlv, what);
    p = s + 4;
  } else {
    throw derError(`expected ${what} (UTCTime or GeneralizedTime), found ${tagName(tlv.tag)}`, tlv.start);
  }
  const month = digits(buf, p, 2, tlv, what);
  const day = digits(buf, p + 2, 2, tlv, what);
  const hour = digits(buf, p + 4, 2, tlv, what);
  const minute = digits(buf, p + 6, 2, tlv, what);
  const second = digits(buf, p + 8, 2, tlv, what);
  p += 10;
  let ms = 0;
  if (tlv.tag === Tag.GENERALIZED_TIME && buf[p] === 0x2e) {
    const fracStart = p + 1;
    const q = tlv.end - 1;
    if (q === fracStart || buf[q - 1] === 0x30) throw derError(`${what}: fractional seconds must not end in zero`, tlv.start);
    const n = Math.min(q - fracStart, 3);
    ms = digits(buf, fracStart, n, tlv, what) * 10 ** (3 - n);
    digits(buf, fracStart, q - fracStart, tlv, what);
    p = q;
  }
  if (p !== tlv.end - 1 || buf[p] !== 0x5a) throw derError(`${what}: time must end in Z`, tlv.start);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const maxDay = month === 2 && !leap ? 28 : (DAYS[month - 1] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > maxDay || hour > 23 || minute > 59 || second > 59) {
    throw derError(`${what}: time is out of range`, tlv.start);
  }
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms));
  // Date.UTC maps years 0-99 to 1900-1999; set the year separately so GeneralizedTime 0050 stays year 50.
  date.setUTCFullYear(year);
  return date;
}

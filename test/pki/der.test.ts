// The strict DER reader: lengths, tags, values from openssl's encoder, and a DER_INVALID with an offset for every fault.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isPlatformError, type PlatformError } from "../../src/errors.js";
import { contextTag, decodeOid, DerReader, Tag } from "../../src/pki/der.js";
import { bits, concat, ctx, hex, int, nul, octets, oid, seq, tlv, utf8 } from "./der-builder.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir("der-test-");

/** DER written by `openssl asn1parse -genstr`, an encoder independent of ours. */
function openssl(genstr: string): Uint8Array {
  const out = join(dir, "out.der");
  execFileSync("openssl", ["asn1parse", "-genstr", genstr, "-out", out, "-noout"], { stdio: "ignore" });
  return new Uint8Array(readFileSync(out));
}

function failure(fn: () => unknown): PlatformError {
  try {
    fn();
  } catch (err) {
    if (isPlatformError(err)) return err;
    throw new Error(`expected a PlatformError, got ${String(err)}`);
  }
  throw new Error("expected a failure");
}

const reader = (b: Uint8Array): DerReader => new DerReader(b);

describe("lengths and tags", () => {
  it.each([
    ["short form", concat([0x04, 0x7f], new Uint8Array(0x7f)), 0x7f],
    ["one length byte", concat([0x04, 0x81, 0x80], new Uint8Array(0x80)), 0x80],
    ["two length bytes", concat([0x04, 0x82, 0x01, 0x00], new Uint8Array(0x100)), 0x100],
    ["three length bytes", concat([0x04, 0x83, 0x01, 0x00, 0x00], new Uint8Array(0x10000)), 0x10000],
  ])("reads the %s", (_name, bytes, length) => {
    const r = reader(bytes);
    expect(r.octetString().length).toBe(length);
    r.finish();
  });

  it.each([
    ["an indefinite length", hex("3080 0500 0000"), "indefinite length is not DER", 0],
    ["a long form for a short length", hex("0481 05 0102030405"), "long-form length 5 is not minimal", 0],
    ["a length with a leading zero", concat(hex("04 82 0090"), new Uint8Array(0x90)), "leading zero byte", 0],
    ["a length of five bytes", hex("04 85 0000000001 00"), "length of 5 bytes is too large", 0],
    ["a length beyond the data", hex("04 05 0102"), "length 5 exceeds the 2 bytes available", 0],
    ["a truncated length", hex("04 82 01"), "truncated length", 0],
    ["a header without a length", hex("04"), "truncated length", 0],
    ["a high tag number", hex("1f 81 00 00"), "high tag numbers", 0],
    ["a wrong tag", hex("0400"), "expected element (SEQUENCE), found OCTET STRING", 0],
    ["nothing at all", new Uint8Array(0), "found end of data", 0],
  ])("refuses %s", (_name, bytes, message, offset) => {
    const err = failure(() => reader(bytes).next(message.startsWith("expected") ? Tag.SEQUENCE : undefined));
    expect(err.code).toBe("DER_INVALID");
    expect(err.message).toContain(message);
    expect(err.message).toMatch(new RegExp(`at offset ${offset}$`));
    expect(err.details).toEqual({ offset });
  });

  it("reports absolute offsets from nested readers", () => {
    const bytes = seq(seq(nul()), seq(nul(), hex("0200")));
    const outer = reader(bytes).sequence();
    outer.sequence();
    const inner = outer.sequence();
    inner.null();
    expect(failure(() => inner.integer("serial")).message).toBe("serial: empty INTEGER at offset 10");
  });

  it("refuses trailing bytes where a structure must end", () => {
    const r = reader(seq(nul(), nul()));
    const s = r.sequence("outer");
    s.null();
    expect(failure(() => s.finish("outer")).message).toBe("2 unexpected trailing bytes after outer at offset 4");
  });

  it("reads optional and context-tagged elements, and peeks", () => {
    const r = reader(seq(ctx(0, true, int(2)), int(7), ctx(3, false, [1])));
    const s = r.sequence();
    expect(s.peekTag()).toBe(0xa0);
    const v = s.optional(contextTag(0, true));
    expect(v && s.child(v).smallInteger()).toBe(2);
    expect(s.optional(contextTag(0, true))).toBeUndefined();
    expect(s.smallInteger()).toBe(7);
    const t = s.next(contextTag(3, false));
    expect(Array.from(s.contents(t))).toEqual([1]);
    expect(s.hasMore()).toBe(false);
    expect(s.peekTag()).toBeUndefined();
  });

  it("hands out views of the input, not copies", () => {
    const bytes = seq(octets([1, 2, 3]));
    const view = reader(bytes).sequence().octetString();
    bytes[bytes.length - 1] = 9;
    expect(Array.from(view)).toEqual([1, 2, 9]);
  });

  it("reads a view again through viewReader, keeping offsets absolute", () => {
    const bytes = seq(octets(hex("0201ff 0500")));
    const r = reader(bytes);
    const value = r.sequence().octetString();
    const inner = r.viewReader(value);
    expect(inner.smallInteger()).toBe(-1);
    expect(failure(() => inner.finish()).message).toContain("at offset 7");
    expect(() => r.viewReader(new Uint8Array(2))).toThrow(RangeError);
  });
});

describe("INTEGER", () => {
  it.each([0, 1, 127, 128, 255, 256, -1, -128, -129, 2 ** 40, -(2 ** 40), 2 ** 47 - 1])("reads %i as openssl encodes it", (n) => {
    const der = openssl(`INT:${n}`);
    expect(der).toEqual(int(n));
    expect(reader(der).smallInteger()).toBe(n);
  });

  it.each([
    ["a positive value with a redundant zero", hex("0202 007f")],
    ["a negative value with a redundant 0xff", hex("0202 ff80")],
    ["an empty INTEGER", hex("0200")],
  ])("refuses %s", (_name, bytes) => {
    expect(failure(() => reader(bytes).integer()).code).toBe("DER_INVALID");
  });

  it("returns unsigned magnitudes without the sign byte and refuses negatives", () => {
    expect(Array.from(reader(hex("0202 00ff")).unsignedInteger())).toEqual([0xff]);
    expect(Array.from(reader(hex("0201 00")).unsignedInteger())).toEqual([0]);
    expect(failure(() => reader(hex("0201 ff")).unsignedInteger("modulus")).message).toBe("modulus: INTEGER must not be negative at offset 0");
  });

  it("refuses an INTEGER too large for a number", () => {
    expect(failure(() => reader(int(2n ** 60n)).smallInteger()).message).toContain("too large");
  });
});

describe("OBJECT IDENTIFIER", () => {
  it.each([
    "2.5.4.3",
    "0.9.2342.19200300.100.1.25",
    "1.2.840.113549.1.1.11",
    "1.3.6.1.4.1.311.2.1.14",
    "2.999.3",
    "1.39",
    "2.25.329800735698586629295641978511506172918",
  ])("reads %s as openssl encodes it", (dotted) => {
    const der = openssl(`OID:${dotted}`);
    expect(der).toEqual(oid(dotted));
    expect(reader(der).oid()).toBe(dotted);
    expect(reader(der).oid()).toBe(dotted);
  });

  it.each([
    ["an empty OID", hex("0600"), "empty"],
    ["a truncated sub-identifier", hex("0602 2a86"), "ends inside a sub-identifier"],
    ["a non-minimal sub-identifier", hex("0603 2a8001"), "not minimal"],
  ])("refuses %s", (_name, bytes, message) => {
    expect(failure(() => reader(bytes).oid()).message).toContain(message);
  });

  it("decodes long OIDs without caching them", () => {
    const long = `1.2.${Array.from({ length: 40 }, (_, i) => 1000 + i).join(".")}`;
    const der = oid(long);
    expect(decodeOid(der, 2, der.length)).toBe(long);
  });
});

describe("simple values", () => {
  it.each([
    ["BOOLEAN TRUE", openssl("BOOL:TRUE"), (r: DerReader) => r.boolean(), true],
    ["BOOLEAN FALSE", openssl("BOOL:FALSE"), (r: DerReader) => r.boolean(), false],
    ["NULL", openssl("NULL"), (r: DerReader) => r.null(), undefined],
    ["OCTET STRING", openssl("FORMAT:HEX,OCTETSTRING:0102"), (r: DerReader) => Array.from(r.octetString()), [1, 2]],
    ["BIT STRING", openssl("FORMAT:HEX,BITSTR:a5f0"), (r: DerReader) => Array.from(r.bitString().bytes), [0xa5, 0xf0]],
  ])("reads %s", (_name, der, read, value) => {
    expect(read(reader(der))).toEqual(value);
  });

  it.each([
    ["a BOOLEAN of 0x01", hex("010101"), (r: DerReader) => r.boolean(), "0x00 or 0xff"],
    ["a two-byte BOOLEAN", hex("0102ffff"), (r: DerReader) => r.boolean(), "one byte"],
    ["a NULL with content", hex("050100"), (r: DerReader) => r.null(), "must be empty"],
    ["a BIT STRING without its unused-bits byte", hex("0300"), (r: DerReader) => r.bitString(), "unused-bits byte"],
    ["a BIT STRING with 8 unused bits", hex("0302 08ff"), (r: DerReader) => r.bitString(), "bad unused-bits count 8"],
    ["an empty BIT STRING with unused bits", hex("0301 03"), (r: DerReader) => r.bitString(), "bad unused-bits count 3"],
    ["a BIT STRING with non-zero unused bits", hex("0302 0301"), (r: DerReader) => r.bitString(), "unused bits are not zero"],
  ])("refuses %s", (_name, bytes, read, message) => {
    expect(failure(() => read(reader(bytes))).message).toContain(message);
  });

  it("reports unused bits of a BIT STRING", () => {
    expect(reader(hex("0302 04f0")).bitString().unusedBits).toBe(4);
    expect(Array.from(reader(bits([1, 2])).bitString().bytes)).toEqual([1, 2]);
  });
});

describe("strings", () => {
  it.each([
    ["UTF8String", "FORMAT:UTF8,UTF8:Grüße 日本", "Grüße 日本"],
    ["BMPString", "FORMAT:UTF8,BMP:Grüße 日本", "Grüße 日本"],
    ["UniversalString", "FORMAT:UTF8,UNIV:Grüße 😀", "Grüße 😀"],
    ["T61String", "T61:abc", "abc"],
    ["PrintableString", "PRINTABLE:Ab 1'()+,-./:=?", "Ab 1'()+,-./:=?"],
    ["IA5String", "IA5:a@b.c", "a@b.c"],
    ["VisibleString", "VISIBLE:x y~", "x y~"],
    ["NumericString", "NUMERIC:12 3", "12 3"],
  ])("reads a %s written by openssl", (_name, genstr, value) => {
    expect(reader(openssl(genstr)).string()).toBe(value);
  });

  it("reads a T61String as Latin-1", () => {
    expect(reader(tlv(0x14, [0x63, 0x61, 0x66, 0xe9])).string()).toBe("café");
  });

  it("reads long ASCII strings whole, inside a larger buffer (UTF8String, IA5String and T61String of 100 to 70,000 bytes)", () => {
    for (const n of [100, 1024, 1025, 70_000]) {
      const text = Array.from({ length: n }, (_, i) => String.fromCharCode(0x61 + (i % 26))).join("");
      const bytes = new TextEncoder().encode(text);
      for (const tag of [0x0c, 0x16, 0x14]) {
        // After a leading element, so the string starts inside the buffer rather than at its first byte.
        const r = reader(seq(int(7), tlv(tag, bytes)));
        const inner = r.sequence();
        expect([...inner.integer()]).toEqual([7]);
        expect(inner.string()).toBe(text);
      }
    }
  });

  it("accepts '*' and '&' in a PrintableString, as widely deployed encoders write them", () => {
    expect(reader(tlv(0x13, new TextEncoder().encode("*.a&b"))).string()).toBe("*.a&b");
  });

  it.each([
    ["invalid UTF-8", tlv(0x0c, [0xc3, 0x28]), "not valid UTF-8"],
    ["'@' in a PrintableString", tlv(0x13, [0x40]), "PrintableString"],
    ["a high byte in an IA5String", tlv(0x16, [0x80]), "IA5String"],
    ["a letter in a NumericString", tlv(0x12, [0x41]), "NumericString"],
    ["a control character in a VisibleString", tlv(0x1a, [0x07]), "VisibleString"],
    ["an odd-length BMPString", tlv(0x1e, [0, 0x41, 0]), "odd length"],
    ["a lone surrogate in a BMPString", tlv(0x1e, [0xd8, 0x00]), "not valid UTF-16"],
    ["a UniversalString of 3 bytes", tlv(0x1c, [0, 0, 0x41]), "multiple of 4"],
    ["a code point above U+10FFFF", tlv(0x1c, [0, 0x11, 0, 0]), "invalid code point"],
    ["a non-string tag", int(1), "a string type"],
  ])("refuses %s", (_name, bytes, message) => {
    const err = failure(() => reader(bytes).string("value"));
    expect(err.code).toBe("DER_INVALID");
    expect(err.message).toContain(message);
  });

  it("decodes a UTF8String made by our builder", () => {
    expect(reader(utf8("système")).string()).toBe("système");
  });
});

describe("times", () => {
  it.each([
    ["UTCTIME:491231235959Z", "2049-12-31T23:59:59.000Z"],
    ["UTCTIME:500101000000Z", "1950-01-01T00:00:00.000Z"],
    ["GENTIME:20240229120000Z", "2024-02-29T12:00:00.000Z"],
    ["GENTIME:20240229120000.5Z", "2024-02-29T12:00:00.500Z"],
    ["GENTIME:99991231235959Z", "9999-12-31T23:59:59.000Z"],
    ["GENTIME:00500101000000Z", "0050-01-01T00:00:00.000Z"],
  ])("reads %s", (genstr, iso) => {
    expect(reader(openssl(genstr)).time().toISOString()).toBe(iso);
  });

  const t = (tag: number, text: string): Uint8Array => tlv(tag, new TextEncoder().encode(text));
  it.each([
    ["a UTCTime without seconds", t(0x17, "4912312359Z"), "YYMMDDHHMMSSZ"],
    ["a UTCTime with an offset", t(0x17, "491231235959+0100"), "YYMMDDHHMMSSZ"],
    ["a GeneralizedTime without Z", t(0x18, "20240229120000"), "GeneralizedTime"],
    ["a GeneralizedTime with a local offset", t(0x18, "20240229120000+01"), "end in Z"],
    ["February 29 in a common year", t(0x18, "20230229120000Z"), "out of range"],
    ["hour 24", t(0x18, "20230101240000Z"), "out of range"],
    ["month 13", t(0x17, "231301000000Z"), "out of range"],
    ["fractional seconds ending in zero", t(0x18, "20240229120000.50Z"), "must not end in zero"],
    ["an empty fraction", t(0x18, "20240229120000.Z"), "must not end in zero"],
    ["a non-digit", t(0x18, "2024022912000aZ"), "non-digit"],
    ["a non-time tag", int(5), "UTCTime or GeneralizedTime"],
  ])("refuses %s", (_name, bytes, message) => {
    expect(failure(() => reader(bytes).time()).message).toContain(message);
  });
});

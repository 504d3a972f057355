import * as asn1js from "asn1js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bitString,
  boolean,
  concat,
  encodeLength,
  explicit,
  generalizedTime,
  ia5String,
  implicitPrimitive,
  integer,
  namedBitString,
  objectIdentifier,
  octetString,
  printableString,
  sequence,
  setOf,
  time,
  tlv,
  utcTime,
  utf8String,
} from "../../src/pki/der-writer.js";
import { DerReader } from "../../src/pki/der.js";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const bytes = (h: string) => Uint8Array.from(Buffer.from(h, "hex"));

/** Decodes with asn1js (an independent BER decoder) and requires the whole input to be consumed. */
function decode(der: Uint8Array): asn1js.AsnType {
  const parsed = asn1js.fromBER(Uint8Array.from(der));
  expect(parsed.offset).toBe(der.length);
  expect(parsed.result.error).toBe("");
  return parsed.result;
}

describe("DER writer", () => {
  it.each([
    [0, "00"],
    [127, "7f"],
    [128, "8180"],
    [255, "81ff"],
    [256, "820100"],
    [65535, "82ffff"],
    [65536, "83010000"],
  ])("encodes length %i minimally", (n, expected) => {
    expect(hex(encodeLength(n))).toBe(expected);
  });

  it.each([0, 1, 127, 128, 255, 256, 1000, 65535, 65536, 70000])("frames a %i-byte value with a header any decoder reads back", (n) => {
    const der = tlv(0x04, new Uint8Array(n).fill(7));
    const reader = new DerReader(der);
    expect(reader.octetString()).toHaveLength(n);
    reader.finish();
  });

  it.each([
    ["zero", 0, "020100"],
    ["127", 127, "02017f"],
    ["128 with a sign octet", 128, "02020080"],
    ["256", 256, "02020100"],
    ["a bigint", 2n ** 64n, "0209010000000000000000"],
    ["magnitude bytes with leading zeros", bytes("000001ff"), "020201ff"],
    ["magnitude bytes with the top bit set", bytes("ff"), "020200ff"],
    ["an all-zero magnitude", bytes("0000"), "020100"],
  ] as const)("encodes INTEGER %s", (_name, value, expected) => {
    expect(hex(integer(value as number | bigint | Uint8Array))).toBe(expected);
  });

  it("refuses a negative INTEGER", () => {
    expect(() => integer(-1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("encodes any non-negative bigint as asn1js reads it", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 200n }), (n) => {
        const decoded = decode(integer(n)) as asn1js.Integer;
        expect(decoded.toBigInt()).toBe(n);
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ["1.2.840.113549", "06062a864886f70d"],
    ["2.5.29.19", "0603551d13"],
    ["2.999.3", "0603883703"],
    ["1.3.6.1.4.1.311.10.3.3", "060a2b0601040182370a0303"],
  ])("encodes OID %s", (oid, expected) => {
    expect(hex(objectIdentifier(oid))).toBe(expected);
  });

  it("round-trips random OIDs, large arcs included, through the DER reader", () => {
    const oid = fc
      .tuple(fc.constantFrom(0, 1, 2), fc.nat(39), fc.array(fc.bigInt({ min: 0n, max: 2n ** 70n }), { maxLength: 6 }))
      .map(([a, b, rest]) => [a, b, ...rest].join("."));
    fc.assert(
      fc.property(oid, (text) => {
        expect(new DerReader(objectIdentifier(text)).oid()).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it.each(["", "1", "3.1", "1.40", "1.2.-3", "1.02", "a.b"])("refuses the malformed OID %j", (oid) => {
    expect(() => objectIdentifier(oid)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it.each([
    ["digitalSignature", 1 << 0, "03020780"],
    ["digitalSignature + keyEncipherment", (1 << 0) | (1 << 2), "030205a0"],
    ["keyCertSign + cRLSign", (1 << 5) | (1 << 6), "03020106"],
    ["decipherOnly (bit 8)", 1 << 8, "0303070080"],
    ["nothing", 0, "030100"],
  ])("encodes the named bits of %s without trailing zero bits", (_name, mask, expected) => {
    expect(hex(namedBitString(mask))).toBe(expected);
  });

  it.each([
    ["UTCTime", () => utcTime(new Date("2030-01-02T03:04:05.999Z")), "170d3330303130323033303430355a"],
    ["UTCTime in 1950", () => utcTime(new Date("1950-01-01T00:00:00Z")), "170d3530303130313030303030305a"],
    ["GeneralizedTime", () => generalizedTime(new Date("2050-01-01T00:00:00Z")), "180f32303530303130313030303030305a"],
    ["Time for 2049", () => time(new Date("2049-12-31T23:59:59Z")), "170d3439313233313233353935395a"],
    ["Time for 2050", () => time(new Date("2050-01-01T00:00:00Z")), "180f32303530303130313030303030305a"],
    ["Time for 1949", () => time(new Date("1949-12-31T23:59:59Z")), "180f31393439313233313233353935395a"],
  ])("encodes %s per RFC 5280", (_name, make, expected) => {
    expect(hex(make())).toBe(expected);
  });

  it("writes times the DER reader reads back to the second", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("1950-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }), (d) => {
        const back = new DerReader(time(d)).time();
        expect(back.getTime()).toBe(Math.floor(d.getTime() / 1000) * 1000);
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ["UTCTime after 2049", () => utcTime(new Date("2050-01-01T00:00:00Z"))],
    ["an invalid date", () => time(new Date("nope"))],
    ["a PrintableString with @", () => printableString("a@b")],
    ["an IA5String with é", () => ia5String("é")],
    ["a BIT STRING with 8 unused bits", () => bitString(Uint8Array.of(0), 8)],
  ])("refuses %s", (_name, make) => {
    expect(make).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("orders SET OF elements by their encodings", () => {
    const a = octetString(Uint8Array.of(2));
    const b = octetString(Uint8Array.of(1));
    const c = octetString(Uint8Array.of(1, 0));
    // 04 01 01 < 04 01 02 < 04 02 01 00: content bytes decide before lengths of the whole element do.
    expect(hex(setOf(c, a, b))).toBe(`310a${hex(b)}${hex(a)}${hex(c)}`);
  });

  it("builds nested structures that asn1js decodes to the same values", () => {
    const der = sequence(
      explicit(0, integer(2)),
      implicitPrimitive(0, Uint8Array.of(9, 9)),
      boolean(true),
      boolean(false),
      utf8String("grüße"),
      printableString("Example Org"),
      ia5String("a@example.com"),
      bitString(Uint8Array.of(0xaa)),
      concat([octetString(Uint8Array.of(1)), octetString(Uint8Array.of(2))]),
    );
    const seq = decode(der) as asn1js.Sequence;
    const items = seq.valueBlock.value;
    expect(items).toHaveLength(10);
    expect(((items[0] as asn1js.Constructed).valueBlock.value[0] as asn1js.Integer).valueBlock.valueDec).toBe(2);
    expect(hex(new Uint8Array((items[1] as asn1js.Primitive).valueBlock.valueHexView))).toBe("0909");
    expect((items[2] as asn1js.Boolean).getValue()).toBe(true);
    expect((items[3] as asn1js.Boolean).getValue()).toBe(false);
    expect((items[4] as asn1js.Utf8String).getValue()).toBe("grüße");
    expect((items[5] as asn1js.PrintableString).getValue()).toBe("Example Org");
    expect((items[6] as asn1js.IA5String).getValue()).toBe("a@example.com");
    expect(hex(new Uint8Array((items[7] as asn1js.BitString).valueBlock.valueHexView))).toBe("aa");
  });
});

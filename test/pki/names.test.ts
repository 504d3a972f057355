// Names: RDN decoding and RFC 4514 text, GeneralName decoding, and RFC 5952 IPv6 text checked against Python.
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { DerReader } from "../../src/pki/der.js";
import { escapeRfc4514, formatIp, readGeneralNames, readName } from "../../src/pki/names.js";
import { ctx, hex, int, name, oid, seq, str, tlv, utf8 } from "./der-builder.js";

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

function expectDerInvalid(fn: () => unknown, message: string): void {
  try {
    fn();
  } catch (err) {
    expect(isPlatformError(err, "DER_INVALID")).toBe(true);
    expect((err as Error).message).toContain(message);
    return;
  }
  expect.unreachable("expected DER_INVALID");
}

describe("formatIp", () => {
  it.each([
    ["c0000201", "192.0.2.1"],
    ["00000000", "0.0.0.0"],
    ["20010db8000000000000000000000001", "2001:db8::1"],
    ["20010db8000000010001000100010001", "2001:db8:0:1:1:1:1:1"],
    ["20010db8000000000001000000000001", "2001:db8::1:0:0:1"],
    ["20010db8000000010000000000000001", "2001:db8:0:1::1"],
    ["00000000000000000000000000000000", "::"],
    ["00000000000000000000000000000001", "::1"],
    ["00010000000000000000000000000000", "1::"],
    ["20010DB8AAAABBBBCCCCDDDDEEEE0000", "2001:db8:aaaa:bbbb:cccc:dddd:eeee:0"],
    ["00000000000000000000ffffc0000201", "::ffff:192.0.2.1"],
  ])("writes %s as %s", (bytes, text) => {
    expect(formatIp(hex(bytes))).toBe(text);
  });

  it("agrees with Python's ipaddress on IPv6 text for random addresses", () => {
    // Groups are mostly zero so that runs of zeros of every length and position come up.
    const group = fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }));
    const addresses = fc
      .sample(fc.array(group, { minLength: 8, maxLength: 8 }), { numRuns: 400, seed: 5952 })
      .filter((g) => !(g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff))
      .map((g) => Uint8Array.from(g.flatMap((x) => [x >> 8, x & 0xff])));
    const script = "import ipaddress,sys\nfor l in sys.stdin.read().split():\n print(ipaddress.ip_address(bytes.fromhex(l)))";
    const input = addresses.map((a) => Buffer.from(a).toString("hex")).join("\n");
    const python = execFileSync("python3", ["-c", script], { input }).toString().trim().split("\n");
    expect(addresses.map(formatIp)).toEqual(python);
  });

  it("refuses a length that is neither 4 nor 16", () => {
    expect(() => formatIp(new Uint8Array(5))).toThrow(RangeError);
  });
});

describe("escapeRfc4514", () => {
  it.each([
    ["plain", "plain"],
    ["a,b+c", "a\\,b\\+c"],
    ['say "hi"; <x>', 'say \\"hi\\"\\; \\<x\\>'],
    ["back\\slash", "back\\\\slash"],
    ["#lead", "\\#lead"],
    ["mid#dle", "mid#dle"],
    [" both ", "\\ both\\ "],
    [" ", "\\ "],
    ["nul\0byte", "nul\\00byte"],
    ["", ""],
  ])("escapes %j as %j", (value, text) => {
    expect(escapeRfc4514(value)).toBe(text);
  });
});

describe("readName", () => {
  it("decodes RDNs in order and writes RFC 4514 text most specific first", () => {
    const der = name(
      [["2.5.4.6", str(0x13, "DE")]],
      [["2.5.4.10", utf8("Acme, Inc.")]],
      [["2.5.4.11", utf8("a")], ["2.5.4.11", utf8("b")]],
      [["2.5.4.3", tlv(0x1e, [0, 0x4a, 0, 0xf6])]],
    );
    const n = readName(new DerReader(der));
    expect(n.rdns).toEqual([
      [{ oid: "2.5.4.6", shortName: "C", value: "DE" }],
      [{ oid: "2.5.4.10", shortName: "O", value: "Acme, Inc." }],
      [
        { oid: "2.5.4.11", shortName: "OU", value: "a" },
        { oid: "2.5.4.11", shortName: "OU", value: "b" },
      ],
      [{ oid: "2.5.4.3", shortName: "CN", value: "Jö" }],
    ]);
    expect(n.text).toBe("CN=Jö,OU=a+OU=b,O=Acme\\, Inc.,C=DE");
    expect(n.commonName).toBe("Jö");
    expect(n.organizations).toEqual(["Acme, Inc."]);
    expect(n.organizationalUnits).toEqual(["a", "b"]);
    expect(n.der).toEqual(der);
  });

  it("writes unknown types and non-string values as '#' and hex DER", () => {
    const n = readName(new DerReader(name([["1.2.3.4", utf8("x")]], [["2.5.4.3", int(5)]])));
    expect(n.text).toBe("CN=#020105,1.2.3.4=#0c0178");
    expect(n.rdns[1]![0]!.value).toBe("#020105");
  });

  it("keeps the first CN when there are several", () => {
    expect(readName(new DerReader(name([["2.5.4.3", utf8("one")]], [["2.5.4.3", utf8("two")]]))).commonName).toBe("one");
  });

  it("reads an empty name", () => {
    const n = readName(new DerReader(seq()));
    expect([n.text, n.rdns.length, n.commonName]).toEqual(["", 0, undefined]);
  });

  it.each([
    ["an attribute with a third element", seq(tlv(0x31, seq(oid("2.5.4.3"), utf8("a"), utf8("b")))), "trailing"],
    ["an attribute without a value", seq(tlv(0x31, seq(oid("2.5.4.3")))), "found end of data"],
    ["an RDN that is a SEQUENCE", seq(seq(seq(oid("2.5.4.3"), utf8("a")))), "expected name RDN (SET)"],
  ])("refuses %s", (_name, der, message) => {
    expectDerInvalid(() => readName(new DerReader(der)), message);
  });
});

describe("readGeneralNames", () => {
  it("sorts entries by kind, keeping their order", () => {
    const der = seq(
      tlv(0x82, ascii("a.example")),
      tlv(0x87, [10, 0, 0, 1]),
      tlv(0x81, ascii("x@example.com")),
      ctx(4, true, name([["2.5.4.3", utf8("dir")]])),
      tlv(0x86, ascii("spiffe://c/ns/a")),
      tlv(0x82, ascii("b.example")),
      tlv(0x87, hex("fe800000000000000000000000000001")),
      ctx(0, true, oid("1.3.6.1.4.1.311.20.2.3"), ctx(0, true, utf8("upn"))),
      tlv(0x88, [0x2a, 0x03]),
      ctx(5, true, ctx(1, true, utf8("party"))),
    );
    expect(readGeneralNames(new DerReader(der))).toEqual({
      dns: ["a.example", "b.example"],
      ip: ["10.0.0.1", "fe80::1"],
      email: ["x@example.com"],
      uri: ["spiffe://c/ns/a"],
      other: [4, 0, 8, 5],
    });
  });

  it.each([
    ["an empty list", seq(), "empty GeneralNames"],
    ["a constructed dNSName", seq(ctx(2, true, utf8("a"))), "not a GeneralName"],
    ["tag [9]", seq(tlv(0x89, [1])), "not a GeneralName"],
    ["an IP address of 8 bytes", seq(tlv(0x87, new Uint8Array(8))), "8 bytes"],
    ["a non-ASCII URI", seq(tlv(0x86, [0xff])), "IA5String"],
  ])("refuses %s", (_name, der, message) => {
    expectDerInvalid(() => readGeneralNames(new DerReader(der)), message);
  });
});

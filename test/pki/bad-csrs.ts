// Hand-made requests parseCsr refuses, with the error code and a fragment of the message: shared by the reader's tests
// and the native issuance's differential test (which must refuse each of them as well).
import type { ErrorCode } from "../../src/errors.js";
import { attribute, extension, type HandCsrOptions } from "./csr-builder.js";
import { bits, ctx, hex, int, name, nul, octets, oid, seq, str, tlv, utf8 } from "./der-builder.js";

const sanExt = extension("2.5.29.17", seq(tlv(0x82, [0x61])));

export const BAD_HAND_CSRS: readonly [string, HandCsrOptions, ErrorCode, string][] = [
  ["version 1", { version: 1 }, "CSR_INVALID", "version must be 0"],
  ["a duplicate extension", { extensions: [sanExt, sanExt] }, "CSR_INVALID", "2.5.29.17 is requested more than once"],
  [
    "two extensionRequest attributes",
    { attributes: [attribute("1.2.840.113549.1.9.14", seq(sanExt))], extensions: [] },
    "CSR_INVALID",
    "more than one extensionRequest",
  ],
  ["an extensionRequest with two values", { attributes: [attribute("1.2.840.113549.1.9.14", seq(), seq())] }, "CSR_INVALID", "more than one value"],
  ["an extension value that is not one DER element", { extensions: [extension("1.2.3", hex("0500 0500"))] }, "DER_INVALID", "trailing"],
  ["an empty subjectAltName", { extensions: [extension("2.5.29.17", seq())] }, "DER_INVALID", "empty GeneralNames"],
  ["a 5-byte IP address", { extensions: [extension("2.5.29.17", seq(tlv(0x87, [1, 2, 3, 4, 5])))] }, "DER_INVALID", "5 bytes"],
  ["a non-ASCII DNS name", { extensions: [extension("2.5.29.17", seq(tlv(0x82, [0xc3, 0xa9])))] }, "DER_INVALID", "IA5String"],
  ["a universal tag in subjectAltName", { extensions: [extension("2.5.29.17", seq(utf8("x")))] }, "DER_INVALID", "not a GeneralName"],
  ["a non-DER BOOLEAN critical flag", { extensions: [seq(oid("1.2.3"), [0x01, 0x01, 0x01], octets(nul()))] }, "DER_INVALID", "0x00 or 0xff"],
  ["an empty RDN", { subject: seq(tlv(0x31)) }, "DER_INVALID", "empty relative distinguished name"],
  ["a bad UTF8String in the subject", { subject: name([["2.5.4.3", tlv(0x0c, [0xff])]]) }, "DER_INVALID", "UTF-8"],
  ["a bad PrintableString in the subject", { subject: name([["2.5.4.3", str(0x13, "a@b")]]) }, "DER_INVALID", "PrintableString"],
  // Copied into certificates as they are, and OpenSSL could not read them back there.
  ["a VisibleString in the subject", { subject: name([["2.5.4.3", str(0x1a, "v~")]]) }, "DER_INVALID", "VisibleString cannot be copied into a certificate"],
  ["a BMPString surrogate pair in the subject", { subject: name([["2.5.4.11", tlv(0x1e, [0x00, 0x41, 0xd8, 0x34, 0xdd, 0x1e])]]) }, "DER_INVALID", "surrogate pairs"],
  ["trailing bytes inside the request", { trailer: nul() }, "DER_INVALID", "trailing bytes after CertificationRequest"],
  ["a mismatched signature algorithm", { signatureAlgorithm: seq(oid("1.2.840.113549.1.1.11"), nul()) }, "CSR_INVALID", "does not match the ecdsa key"],
  ["ECDSA with parameters", { signatureAlgorithm: seq(oid("1.2.840.10045.4.3.2"), nul()) }, "CSR_INVALID", "unexpected parameters"],
  ["an unknown signature algorithm", { signatureAlgorithm: seq(oid("1.2.3.4")) }, "CSR_INVALID", "1.2.3.4 is not supported"],
  ["an X25519 key", { spki: seq(seq(oid("1.3.101.110")), bits(new Uint8Array(32))) }, "KEY_UNSUPPORTED", "X25519"],
  ["an EC key on an unnamed curve", { spki: seq(seq(oid("1.2.840.10045.2.1"), nul()), bits([4])) }, "KEY_UNSUPPORTED", "not named"],
  ["an EC point of the wrong size", { spki: seq(seq(oid("1.2.840.10045.2.1"), oid("1.2.840.10045.3.1.7")), bits([4, 1, 2])) }, "KEY_INVALID", "3 bytes"],
  ["an Ed25519 key of 31 bytes", { spki: seq(seq(oid("1.3.101.112")), bits(new Uint8Array(31))) }, "KEY_INVALID", "32 bytes"],
  ["an RSA key above 8192 bits", { spki: rsaSpki(8200n) }, "KEY_TOO_WEAK", "above the 8192-bit maximum"],
  ["an RSA key with an even modulus", { spki: rsaSpki(2048n, 2n) }, "KEY_INVALID", "modulus is even"],
  ["an RSA key with exponent 1", { spki: rsaSpki(2048n, 1n, 1) }, "KEY_INVALID", "exponent"],
];

export function rsaSpki(bitsWanted: bigint, low = 1n, exponent = 65537): Uint8Array {
  const modulus = (1n << (bitsWanted - 1n)) | low;
  return seq(seq(oid("1.2.840.113549.1.1.1"), nul()), bits(seq(int(modulus), int(exponent))));
}

export function pssAlg(hashOid: string, mgfHashOid: string, salt = 32, trailer = 1): Uint8Array {
  return seq(
    oid("1.2.840.113549.1.1.10"),
    seq(
      ctx(0, true, seq(oid(hashOid))),
      ctx(1, true, seq(oid("1.2.840.113549.1.1.8"), seq(oid(mgfHashOid)))),
      ctx(2, true, int(salt)),
      ctx(3, true, int(trailer)),
    ),
  );
}


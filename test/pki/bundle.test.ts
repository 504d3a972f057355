// Trust bundle and issued-certificate PEM rules with certificates made by openssl and GnuTLS certtool.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { isPlatformError, type ErrorCause } from "../../src/errors.js";
import { canonicalizeBundle, validateIssuedCertificate, validateTrustBundle } from "../../src/pki/bundle.js";
import { decodePem, encodePem } from "../../src/pki/pem.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir("bundle-test-");

let counter = 0;
function file(content: string): string {
  const path = join(dir, `f${counter++}`);
  writeFileSync(path, content);
  return path;
}

function ecKey(): string {
  return file(execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]).toString());
}

interface CertOptions {
  readonly cn?: string;
  /** `-addext` values; none at all gives a v1 certificate without extensions. */
  readonly addext?: readonly string[];
}

/** A self-signed certificate from `openssl req -x509`. */
function opensslCert(o: CertOptions = {}): string {
  const args = ["req", "-x509", "-new", "-key", ecKey(), "-subj", `/CN=${o.cn ?? "anchor"}`, "-days", "2", "-config", file("[req]\ndistinguished_name=dn\n[dn]\n")];
  for (const ext of o.addext ?? []) args.push("-addext", ext);
  return execFileSync("openssl", args).toString();
}

function certtoolCa(): string {
  const key = file(execFileSync("certtool", ["--generate-privkey", "--key-type", "ecdsa"], { stdio: ["ignore", "pipe", "ignore"] }).toString());
  const template = file('cn = "GnuTLS root"\nca\ncert_signing_key\nexpiration_days = 2\n');
  return execFileSync("certtool", ["--generate-self-signed", "--load-privkey", key, "--template", template], { stdio: ["ignore", "pipe", "ignore"] }).toString();
}

const CA = ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign"];
let caA: string;
let caB: string;
let gnutlsCa: string;
let leaf: string;
let noExtensions: string;

beforeAll(() => {
  caA = opensslCert({ cn: "a", addext: CA });
  caB = opensslCert({ cn: "b", addext: CA });
  gnutlsCa = certtoolCa();
  leaf = opensslCert({ cn: "leaf", addext: ["basicConstraints=critical,CA:FALSE"] });
  noExtensions = opensslCert({ cn: "v1" });
});

function causesOf(fn: () => unknown): { code: string; causes: readonly ErrorCause[]; message: string } {
  try {
    fn();
  } catch (err) {
    if (isPlatformError(err)) return { code: err.code, causes: err.causes, message: err.message };
    return { code: "untyped", causes: [], message: String(err) };
  }
  return { code: "none", causes: [], message: "" };
}

const withHeaders = (pem: string): string => pem.replace("-----\n", "-----\nProc-Type: 4,CRL\n\n");
const garbageBlock = encodePem("CERTIFICATE", Uint8Array.from([0x30, 0x03, 0x02, 0x01, 0x01]));

describe("validateTrustBundle", () => {
  it("accepts CA certificates from openssl and certtool with text around them", () => {
    const result = validateTrustBundle(`# anchors\n${caA}\nbetween\n${gnutlsCa}trailing text`);
    expect(result.certificates).toHaveLength(2);
    expect(result.certificates[0]).toBe(encodePem("CERTIFICATE", decodePem(caA)[0]!.der));
  });

  it.each([
    ["a non-CA certificate", () => caA + leaf, "block 2 (label \"CERTIFICATE\"): certificate's BasicConstraints does not set CA=true"],
    ["a certificate without BasicConstraints", () => noExtensions, "block 1 (label \"CERTIFICATE\"): certificate has no BasicConstraints extension (a trust anchor must be a CA)"],
    ["a duplicate certificate", () => caA + caB + caA, "block 3 (label \"CERTIFICATE\"): duplicate of block 1"],
    ["PEM headers", () => caA + withHeaders(caB), "block 2 (label \"CERTIFICATE\"): PEM headers are not allowed"],
    ["a wrong label", () => caA.replace(/CERTIFICATE/g, "X509 CRL"), "block 1 (label \"X509 CRL\"): only CERTIFICATE blocks are allowed"],
    ["a garbage block", () => caA + garbageBlock, "block 2 (label \"CERTIFICATE\"): not a valid X.509 certificate"],
    ["trailing bytes inside a block", () => encodePem("CERTIFICATE", Uint8Array.from([...decodePem(caA)[0]!.der, 0])), "1 unexpected trailing bytes after Certificate"],
    ["text without blocks", () => "no pem here", "must contain at least one CERTIFICATE block"],
    ["an empty string", () => "", "must contain at least one CERTIFICATE block"],
    ["broken base64", () => caA.replace(/\n[A-Za-z0-9+/]{10}/, "\n!!!!!!!!!!"), "content is not valid base64"],
  ])("refuses %s", (_name, bundle, message) => {
    const result = causesOf(() => validateTrustBundle(bundle()));
    expect(result.code).toBe("BUNDLE_INVALID");
    expect(result.causes).toHaveLength(1);
    expect(result.causes[0]!.field).toBe("spec.trustBundle");
    expect(result.causes[0]!.message).toContain(message);
    expect(result.message).toContain(message);
  });

  it("reports one cause per offending block", () => {
    const result = causesOf(() => validateTrustBundle([caA, leaf, garbageBlock, caA, withHeaders(caB)].join("")));
    expect(result.causes.map((c) => [c.reason, c.message.replace(/:.*/, "")])).toEqual([
      ["FieldValueInvalid", 'block 2 (label "CERTIFICATE")'],
      ["FieldValueInvalid", 'block 3 (label "CERTIFICATE")'],
      ["FieldValueDuplicate", 'block 4 (label "CERTIFICATE")'],
      ["FieldValueInvalid", 'block 5 (label "CERTIFICATE")'],
    ]);
  });

  it("names a custom field in causes", () => {
    const result = causesOf(() => validateTrustBundle(leaf, { field: "data.ca" }));
    expect(result.causes[0]!.field).toBe("data.ca");
  });
});

describe("validateIssuedCertificate", () => {
  it("accepts a chain of leaf and CA with text between blocks", () => {
    expect(validateIssuedCertificate(`${leaf}intermediate follows\n${caA}`).certificates).toHaveLength(2);
  });

  it("reports each certificate's validity as openssl reads it, in block order", () => {
    const { facts } = validateIssuedCertificate(`${leaf}${caA}`);
    const opensslDates = (pem: string) =>
      execFileSync("openssl", ["x509", "-noout", "-startdate", "-enddate"], { input: pem })
        .toString()
        .split("\n")
        .filter((l) => l.includes("="))
        .map((l) => new Date(l.split("=")[1]!).getTime());
    expect(facts.map((f) => [f.notBefore.getTime(), f.notAfter.getTime()])).toEqual([opensslDates(leaf), opensslDates(caA)]);
  });

  it("accepts a certificate without extensions and a repeated certificate", () => {
    expect(validateIssuedCertificate(noExtensions + noExtensions).certificates).toHaveLength(2);
  });

  it.each([
    ["PEM headers", () => withHeaders(leaf), "PEM headers are not allowed"],
    ["a wrong label", () => leaf.replace(/CERTIFICATE/g, "CERTIFICATE REQUEST"), "only CERTIFICATE blocks are allowed"],
    ["a garbage block", () => leaf + garbageBlock, "block 2 (label \"CERTIFICATE\"): not a valid X.509 certificate"],
    ["no block", () => "text", "at least one"],
    ["an unterminated block", () => leaf.replace(/-----END CERTIFICATE-----\n$/, ""), "not terminated"],
  ])("refuses %s", (_name, pem, message) => {
    const result = causesOf(() => validateIssuedCertificate(pem()));
    expect(result.code).toBe("BUNDLE_INVALID");
    expect(result.causes[0]!.field).toBe("status.certificate");
    expect(result.causes[0]!.message).toContain(message);
  });
});

describe("canonicalizeBundle", () => {
  it("gives the same text for the same set in any order, with duplicates and text", () => {
    const one = canonicalizeBundle([caA, caB, gnutlsCa]);
    const two = canonicalizeBundle([`note\n${gnutlsCa}`, caB + caA, caA]);
    expect(two).toBe(one);
    expect(decodePem(one)).toHaveLength(3);
    expect(createHash("sha256").update(one).digest("hex")).toBe(createHash("sha256").update(two).digest("hex"));
  });

  it("orders certificates by their DER bytes", () => {
    const ders = decodePem(canonicalizeBundle([caA, caB, gnutlsCa])).map((b) => Buffer.from(b.der));
    expect([...ders].sort(Buffer.compare)).toEqual(ders);
  });

  it("changes when the set changes", () => {
    expect(canonicalizeBundle([caA])).not.toBe(canonicalizeBundle([caA, caB]));
  });

  it("refuses blocks that are not certificates", () => {
    expect(causesOf(() => canonicalizeBundle([caA, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"])).code).toBe("PEM_LABEL");
  });
});

describe("certificate parsing under mutation", () => {
  // Each mutated certificate either still reads as one (a change inside a value) or is refused with BUNDLE_INVALID
  // naming the block; nothing else may come out. openssl decides independently for a sample of the refusals.
  it("answers every mutated certificate with a verdict or BUNDLE_INVALID, never another error", () => {
    const der = decodePem(caA)[0]!.der;
    let refused = 0;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: der.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: -3, max: 3 }),
        (edits, resize) => {
          let bytes = Uint8Array.from(der);
          for (const [at, value] of edits) bytes[at] = value;
          if (resize < 0) bytes = bytes.subarray(0, bytes.length + resize);
          else if (resize > 0) bytes = Uint8Array.from([...bytes, ...new Array<number>(resize).fill(0)]);
          const outcome = causesOf(() => validateIssuedCertificate(encodePem("CERTIFICATE", bytes)));
          expect(["none", "BUNDLE_INVALID"]).toContain(outcome.code);
          if (outcome.code === "BUNDLE_INVALID") {
            refused++;
            expect(outcome.message).toContain('block 1 (label "CERTIFICATE"): not a valid X.509 certificate');
          }
        },
      ),
      { numRuns: 3000 },
    );
    expect(refused).toBeGreaterThan(100);
  });

  it("refuses what openssl cannot read: truncations and a corrupted outer length", () => {
    const der = decodePem(caA)[0]!.der;
    for (const bytes of [der.subarray(0, der.length - 1), der.subarray(0, 40), Uint8Array.from([der[0]!, der[1]! ^ 0x01, ...der.subarray(2)])]) {
      const pem = encodePem("CERTIFICATE", bytes);
      expect(() => execFileSync("openssl", ["x509", "-noout"], { input: pem, stdio: ["pipe", "ignore", "ignore"] })).toThrow();
      expect(causesOf(() => validateIssuedCertificate(pem)).code).toBe("BUNDLE_INVALID");
    }
  });
});

// parseCsr against requests made by openssl, by the fixture builder and by hand, accepted and refused.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isPlatformError, type ErrorCode } from "../../src/errors.js";
import { CSR_MAX_BYTES, parseCsr } from "../../src/pki/csr.js";
import { encodePem } from "../../src/pki/pem.js";
import { csr } from "../fixtures/csr.js";
import { BAD_HAND_CSRS, pssAlg, rsaSpki } from "./bad-csrs.js";
import { attribute, extension, handCsr, MS_EXTENSION_REQUEST } from "./csr-builder.js";
import { bits, ctx, hex, int, name, nul, octets, oid, seq, str, tlv, utf8 } from "./der-builder.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir("csr-test-");

const keyCache = new Map<string, string>();
const GENPKEY: Record<string, string[]> = {
  rsa1024: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"],
  rsa2048: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
  p256: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
  p384: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
  secp256k1: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1"],
  explicit: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-pkeyopt", "ec_param_enc:explicit"],
  ed25519: ["-algorithm", "ED25519"],
  ed448: ["-algorithm", "ED448"],
};

function opensslKey(type: string): string {
  const cached = keyCache.get(type);
  if (cached) return cached;
  const path = join(dir, `${type}.key`);
  if (type === "dsa") {
    execFileSync("openssl", ["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:1024", "-out", `${path}.param`], { stdio: "ignore" });
    execFileSync("openssl", ["genpkey", "-paramfile", `${path}.param`, "-out", path], { stdio: "ignore" });
  } else if (type === "compressed") {
    execFileSync("openssl", ["ec", "-in", opensslKey("p256"), "-conv_form", "compressed", "-out", path], { stdio: "ignore" });
  } else {
    execFileSync("openssl", ["genpkey", ...GENPKEY[type]!, "-out", path], { stdio: "ignore" });
  }
  keyCache.set(type, path);
  return path;
}

interface OpensslCsrOptions {
  readonly key?: string;
  readonly subj?: string;
  readonly addext?: readonly string[];
  readonly args?: readonly string[];
}

/** A CSR made by `openssl req`. */
function opensslCsr(o: OpensslCsrOptions = {}): string {
  const args = ["req", "-new", "-key", opensslKey(o.key ?? "p256"), "-subj", o.subj ?? "/CN=test", ...(o.args ?? [])];
  for (const ext of o.addext ?? []) args.push("-addext", ext);
  return execFileSync("openssl", args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
}

function errorOf(fn: () => unknown): { code: ErrorCode | "none" | "untyped"; message: string } {
  try {
    fn();
    return { code: "none", message: "" };
  } catch (err) {
    return { code: isPlatformError(err) ? err.code : "untyped", message: (err as Error).message };
  }
}

const pemOf = (der: Uint8Array): string => encodePem("CERTIFICATE REQUEST", der);

describe("parseCsr with openssl requests", () => {
  it.each([
    ["rsa2048", "rsa", 2048, undefined, "1.2.840.113549.1.1.11"],
    ["p256", "ecdsa", 256, "P-256", "1.2.840.10045.4.3.2"],
    ["p384", "ecdsa", 384, "P-384", "1.2.840.10045.4.3.2"],
    ["ed25519", "ed25519", 256, undefined, "1.3.101.112"],
    ["compressed", "ecdsa", 256, "P-256", "1.2.840.10045.4.3.2"],
  ])("accepts a %s key", (key, algorithm, size, curve, sigAlg) => {
    const parsed = parseCsr(opensslCsr({ key, subj: "/O=system:nodes/CN=system:node:a" }));
    expect(parsed.publicKey.algorithm).toBe(algorithm);
    expect(parsed.publicKey.bits).toBe(size);
    expect(parsed.publicKey.curve).toBe(curve);
    expect(parsed.signatureAlgorithm).toBe(sigAlg);
    expect(parsed.subject.text).toBe("CN=system:node:a,O=system:nodes");
  });

  it("copies the SubjectPublicKeyInfo verbatim", () => {
    const pem = opensslCsr({ key: "p384" });
    const spki = execFileSync("openssl", ["pkey", "-in", opensslKey("p384"), "-pubout", "-outform", "DER"]);
    expect(Buffer.from(parseCsr(pem).publicKey.spki).equals(spki)).toBe(true);
  });

  it("accepts RSASSA-PSS signatures", () => {
    const pem = opensslCsr({ key: "rsa2048", args: ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:32", "-sha384"] });
    expect(parseCsr(pem).signatureAlgorithm).toBe("1.2.840.113549.1.1.10");
  });

  it.each<[string, OpensslCsrOptions, ErrorCode, string]>([
    ["an RSA 1024 key", { key: "rsa1024" }, "KEY_TOO_WEAK", "1024 bits is below the 2048-bit minimum"],
    ["a DSA key", { key: "dsa" }, "KEY_UNSUPPORTED", "DSA keys are not accepted"],
    ["a secp256k1 key", { key: "secp256k1" }, "KEY_UNSUPPORTED", "secp256k1 (1.3.132.0.10)"],
    ["explicit EC parameters", { key: "explicit" }, "KEY_UNSUPPORTED", "explicit curve parameters"],
    ["an Ed448 key", { key: "ed448" }, "KEY_UNSUPPORTED", "Ed448"],
    ["a SHA-1 signature", { key: "rsa2048", args: ["-sha1"] }, "CSR_INVALID", "SHA-1 and MD5 are broken"],
    ["an ECDSA SHA-1 signature", { key: "p256", args: ["-sha1"] }, "CSR_INVALID", "ecdsa-with-SHA1"],
    ["a SHA-224 signature", { key: "p256", args: ["-sha224"] }, "CSR_INVALID", "not supported"],
  ])("refuses %s", (_name, options, code, fragment) => {
    const result = errorOf(() => parseCsr(opensslCsr(options)));
    expect(result.code).toBe(code);
    expect(result.message).toContain(fragment);
  });

  it("decodes subjectAltName entries of every kind openssl writes", () => {
    const pem = opensslCsr({
      addext: [
        "subjectAltName=DNS:a.example,DNS:*.b.example,IP:10.0.0.1,IP:2001:db8:0:0:1:0:0:1,IP:::ffff:1.2.3.4,IP:::," +
          "email:x@example.com,URI:spiffe://cluster/ns/a,RID:1.2.3.4,otherName:1.2.3;UTF8:hello,dirName:dir_sect",
      ],
      args: ["-config", configWithDirSection()],
    });
    expect(parseCsr(pem).sans).toEqual({
      dns: ["a.example", "*.b.example"],
      ip: ["10.0.0.1", "2001:db8::1:0:0:1", "::ffff:1.2.3.4", "::"],
      email: ["x@example.com"],
      uri: ["spiffe://cluster/ns/a"],
      other: [8, 0, 4],
    });
  });

  it("reads requested extensions with their critical flag and inner DER", () => {
    const pem = opensslCsr({ addext: ["basicConstraints=critical,CA:TRUE,pathlen:1", "keyUsage=digitalSignature,keyCertSign"] });
    const exts = parseCsr(pem).extensions;
    expect(exts.map((e) => [e.oid, e.critical])).toEqual([
      ["2.5.29.19", true],
      ["2.5.29.15", false],
    ]);
    expect(Buffer.from(exts[0]!.value).toString("hex")).toBe("30060101ff020101");
  });

  it.each([
    ["/CN=a/O=b/OU=c", "OU=c,O=b,CN=a"],
    ["/C=DE/ST=Berlin/L=Berlin/O=Acme, Inc./OU=R+D/CN=#hash value ", undefined],
    ["/DC=org/DC=example/UID=jdoe/CN=J. Doe<x>;y", undefined],
    ["/CN=a+OU=b/O=x\\/y", "O=x/y,CN=a+OU=b"],
    ["/CN=\\ leading space", undefined],
    ["/CN=Grüße 日本", undefined],
    ["/serialNumber=1234/CN=withserial", "CN=withserial,SERIALNUMBER=1234"],
    ["/CN=x/description=custom", "2.5.4.13=#0c06637573746f6d,CN=x"],
  ])("writes subject %s as RFC 4514 text (openssl's RFC 2253 output unless stated)", (subj, expected) => {
    const pem = opensslCsr({ subj, args: ["-utf8"] });
    const openssl = execFileSync("openssl", ["req", "-noout", "-subject", "-nameopt", "RFC2253,-esc_msb"], { input: pem })
      .toString()
      .replace(/^subject=/, "")
      .trim();
    const text = parseCsr(pem).subject.text;
    expect(text).toBe(expected ?? openssl);
  });

  it("exposes the ordered RDNs and the CN, O and OU helpers", () => {
    const subject = parseCsr(opensslCsr({ subj: "/O=system:nodes/O=extra/OU=u1/CN=system:node:a/emailAddress=a@b.c" })).subject;
    expect(subject.commonName).toBe("system:node:a");
    expect(subject.organizations).toEqual(["system:nodes", "extra"]);
    expect(subject.organizationalUnits).toEqual(["u1"]);
    expect(subject.rdns.map((r) => r.map((a) => a.shortName ?? a.oid))).toEqual([["O"], ["O"], ["OU"], ["CN"], ["E"]]);
    expect(subject.text).toBe("E=a@b.c,CN=system:node:a,OU=u1,O=extra,O=system:nodes");
  });

  it("copies the subject Name DER verbatim", () => {
    const pem = opensslCsr({ subj: "/O=Acme/CN=a" });
    const der = parseCsr(pem).subject.der;
    const text = execFileSync("openssl", ["asn1parse", "-inform", "DER", "-i"], { input: der }).toString();
    expect(text.split("\n")[0]).toMatch(/^\s*0:d=0\s+hl=2 l=\s*\d+ cons: SEQUENCE/);
    expect(text).toContain(":Acme");
  });
});

function configWithDirSection(): string {
  const path = join(dir, "dir.cnf");
  writeFileSync(path, "[req]\ndistinguished_name=dn\n[dn]\n[dir_sect]\nCN=inner\n");
  return path;
}

describe("parseCsr with fixture requests", () => {
  it.each(["p256", "p384", "p521", "rsa2048", "rsa3072", "ed25519"] as const)("accepts a %s fixture", async (key) => {
    const f = await csr({ cn: "system:node:n1", o: ["system:nodes"], dns: ["n1.example"], ip: ["192.0.2.7"], key });
    const parsed = parseCsr(f.pem);
    expect(parsed.subject.commonName).toBe("system:node:n1");
    expect(parsed.sans.dns).toEqual(["n1.example"]);
    expect(parsed.sans.ip).toEqual(["192.0.2.7"]);
  });

  it.each([
    ["PEM text", (f: { pem: string; der: Uint8Array }) => f.pem],
    ["DER bytes", (f: { pem: string; der: Uint8Array }) => f.der],
    ["PEM bytes", (f: { pem: string; der: Uint8Array }) => new TextEncoder().encode(f.pem)],
    ["the NEW CERTIFICATE REQUEST label", (f: { pem: string; der: Uint8Array }) => f.pem.replace(/CERTIFICATE REQUEST/g, "NEW CERTIFICATE REQUEST")],
  ])("reads %s", async (_name, form) => {
    const f = await csr({ cn: "forms" });
    const parsed = parseCsr(form(f));
    expect(parsed.der).toEqual(f.der);
    expect(parsed.subject.commonName).toBe("forms");
  });

  it("keeps its result when the caller reuses the input buffer", async () => {
    const f = await csr({ cn: "stable" });
    const input = f.der.slice();
    const parsed = parseCsr(input);
    input.fill(0);
    expect(parsed.der).toEqual(f.der);
    expect(parsed.subject.commonName).toBe("stable");
  });
});

describe("parseCsr with hand-made requests", () => {
  it("accepts a request without the attributes field", () => {
    const der = handCsr({ omitAttributes: true });
    expect(execFileSync("openssl", ["req", "-inform", "DER", "-verify", "-noout"], { input: der, stdio: ["pipe", "pipe", "pipe"] }).toString()).toBe("");
    const parsed = parseCsr(der);
    expect(parsed.extensions).toEqual([]);
    expect(parsed.subject.commonName).toBe("hand");
  });

  it("reads the legacy Microsoft extensionRequest attribute", () => {
    const san = seq(tlv(0x82, new TextEncoder().encode("ms.example")));
    const parsed = parseCsr(handCsr({ extensions: [extension("2.5.29.17", san)], extensionRequestOid: MS_EXTENSION_REQUEST }));
    expect(parsed.sans.dns).toEqual(["ms.example"]);
  });

  it("ignores other attributes such as challengePassword", () => {
    const parsed = parseCsr(handCsr({ attributes: [attribute("1.2.840.113549.1.9.7", utf8("secret"))] }));
    expect(parsed.extensions).toEqual([]);
  });

  it("accepts an explicit FALSE critical flag", () => {
    const parsed = parseCsr(handCsr({ extensions: [extension("1.2.3.4", nul(), false)] }));
    expect(parsed.extensions).toEqual([{ oid: "1.2.3.4", critical: false, value: nul() }]);
  });

  it("writes IPv6 addresses per RFC 5952 and reports other GeneralName kinds", () => {
    const ips = ["00000000000000000000000000000001", "20010db8000000010000000000000001", "20010db8000100000001000000000001", "fe800000000000000000000000000000"];
    const san = seq(...ips.map((h) => tlv(0x87, hex(h))), ctx(0, true, oid("1.2.3"), ctx(0, true, utf8("x"))), tlv(0x88, [0x2a]));
    const parsed = parseCsr(handCsr({ extensions: [extension("2.5.29.17", san)] }));
    expect(parsed.sans.ip).toEqual(["::1", "2001:db8:0:1::1", "2001:db8:1:0:1::1", "fe80::"]);
    expect(parsed.sans.other).toEqual([0, 8]);
  });

  it.each(BAD_HAND_CSRS)("refuses %s", (_name, options, code, fragment) => {
    const result = errorOf(() => parseCsr(handCsr(options)));
    expect(result.code).toBe(code);
    expect(result.message).toContain(fragment);
  });

  it("refuses an EC point that is not on the curve", () => {
    const point = new Uint8Array(65).fill(1);
    point[0] = 4;
    const spki = seq(seq(oid("1.2.840.10045.2.1"), oid("1.2.840.10045.3.1.7")), bits(point));
    expect(errorOf(() => parseCsr(handCsr({ spki }))).code).toBe("KEY_INVALID");
    expect(parseCsr(handCsr({ spki }), { verify: false }).publicKey.curve).toBe("P-256");
  });

  it.each([
    ["no parameters", seq(oid("1.2.840.113549.1.1.10")), "parameters are missing"],
    ["the SHA-1 default hash", seq(oid("1.2.840.113549.1.1.10"), seq()), "SHA-1 default"],
    ["MGF1 with another hash", pssAlg("2.16.840.1.101.3.4.2.1", "2.16.840.1.101.3.4.2.3"), "differs"],
    ["a trailer field of 2", pssAlg("2.16.840.1.101.3.4.2.1", "2.16.840.1.101.3.4.2.1", 32, 2), "trailer field must be 1"],
  ])("refuses RSASSA-PSS with %s", (_name, signatureAlgorithm, fragment) => {
    const result = errorOf(() => parseCsr(handCsr({ spki: rsaSpki(2048n), signatureAlgorithm })));
    expect(result.code).toBe("CSR_INVALID");
    expect(result.message).toContain(fragment);
  });
});

describe("parseCsr input checks", () => {
  it("refuses a PEM block with another label", async () => {
    const f = await csr();
    const result = errorOf(() => parseCsr(f.pem.replace(/CERTIFICATE REQUEST/g, "CERTIFICATE")));
    expect(result).toEqual({ code: "PEM_LABEL", message: 'block 1 (label "CERTIFICATE"): expected label "CERTIFICATE REQUEST" or "NEW CERTIFICATE REQUEST"' });
  });

  it("refuses PEM headers", async () => {
    const f = await csr();
    const withHeaders = f.pem.replace("-----\n", "-----\nComment: x\n\n");
    expect(errorOf(() => parseCsr(withHeaders)).code).toBe("PEM_HEADERS");
  });

  it("refuses a flipped signature bit, unless verification is off", async () => {
    const f = await csr({ key: "rsa2048" });
    const der = f.der.slice();
    der[der.length - 5]! ^= 0x01;
    expect(errorOf(() => parseCsr(der))).toEqual({ code: "CSR_SIGNATURE", message: "CSR signature does not verify with the request's own public key" });
    expect(parseCsr(der, { verify: false }).publicKey.bits).toBe(2048);
  });

  it.each(["p256", "ed25519"] as const)("refuses a %s request whose subject was changed after signing", async (key) => {
    const f = await csr({ cn: "aaaa", key });
    const der = f.der.slice();
    const at = Buffer.from(der).indexOf("aaaa");
    der[at] = 0x62;
    expect(errorOf(() => parseCsr(der)).code).toBe("CSR_SIGNATURE");
  });

  it("refuses trailing bytes after the request", async () => {
    const f = await csr();
    expect(errorOf(() => parseCsr(Uint8Array.from([...f.der, 0])))).toEqual({
      code: "DER_INVALID",
      message: `1 unexpected trailing bytes after CertificationRequest at offset ${f.der.length}`,
    });
    expect(errorOf(() => parseCsr(pemOf(Uint8Array.from([...f.der, 0, 0])))).code).toBe("DER_INVALID");
  });

  it.each([1, 2, 10, 100])("refuses a request truncated by %i bytes", async (cut) => {
    const f = await csr();
    const result = errorOf(() => parseCsr(f.der.subarray(0, f.der.length - cut)));
    expect(result.code).toBe("DER_INVALID");
    expect(result.message).toMatch(/at offset \d+$/);
  });

  it("refuses input above the size limit, and honours a custom limit", async () => {
    const f = await csr();
    const big = f.pem + " ".repeat(CSR_MAX_BYTES);
    expect(errorOf(() => parseCsr(big)).code).toBe("INPUT_TOO_LARGE");
    expect(errorOf(() => parseCsr(new Uint8Array(CSR_MAX_BYTES + 1).fill(0x30))).code).toBe("INPUT_TOO_LARGE");
    expect(errorOf(() => parseCsr(f.der, { maxBytes: f.der.length - 1 })).message).toBe(
      `CSR is ${f.der.length} bytes, above the limit of ${f.der.length - 1}`,
    );
    expect(parseCsr(f.der, { maxBytes: f.der.length }).der.length).toBe(f.der.length);
  });

  it.each<[string, unknown, ErrorCode]>([
    ["an empty string", "", "PEM_INVALID"],
    ["empty bytes", new Uint8Array(0), "PEM_INVALID"],
    ["a number", 42, "CSR_INVALID"],
    ["indefinite-length BER", hex("3080 0000"), "DER_INVALID"],
    ["a non-minimal length", hex("308100"), "DER_INVALID"],
    ["an empty SEQUENCE", hex("3000"), "DER_INVALID"],
  ])("refuses %s", (_name, input, code) => {
    expect(errorOf(() => parseCsr(input as Uint8Array)).code).toBe(code);
  });

  it.each([
    [{ maxBytes: 0 }, "expected `maxBytes` to be a positive integer, got 0"],
    [{ verify: "no" }, 'expected `verify` to be a boolean, got "no"'],
  ])("refuses the option %j with the option message shape", (options, message) => {
    expect(errorOf(() => parseCsr("x", options as never))).toEqual({ code: "INVALID_OPTION", message });
  });
});

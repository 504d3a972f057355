import "reflect-metadata";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { beforeAll, describe, expect, it } from "vitest";
import { caFromPem, generateCa, loadCaFiles, type GenerateCaOptions } from "../../src/pki/ca.js";
import { describeKey, KEY_TYPES } from "../../src/pki/keys.js";
import { csr } from "../fixtures/csr.js";
import { opensslText, T0 } from "./issuance-fixtures.js";
import { tempDir, writeFiles } from "../fixtures/temp-dir.js";
import { run } from "../fixtures/process.js";

const dir = tempDir("ca-");
const hexOf = (b: Uint8Array) => Buffer.from(b).toString("hex");

interface OpensslCaOptions {
  readonly name: string;
  readonly keyAlg?: string[];
  readonly ext?: readonly string[];
}

/** A self-signed certificate made by `openssl req -x509`; returns its PEM and key PEM. */
function opensslCa(o: OpensslCaOptions): { certPem: string; keyPem: string } {
  const key = join(dir, `${o.name}.key`);
  const cert = join(dir, `${o.name}.pem`);
  const ext = o.ext ?? ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign"];
  run("openssl", ["req", "-x509", "-newkey", ...(o.keyAlg ?? ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]), "-nodes", "-keyout", key,
    "-out", cert, "-days", "30", "-subj", `/CN=${o.name}/O=Example Org`, ...ext.flatMap((e) => ["-addext", e])]);
  return { certPem: readFileSync(cert, "utf8"), keyPem: readFileSync(key, "utf8") };
}

const made: Record<string, { certPem: string; keyPem: string }> = {};
beforeAll(() => {
  made.p256 = opensslCa({ name: "p256" });
  made.rsa = opensslCa({ name: "rsa", keyAlg: ["rsa:2048"] });
  made.ed25519 = opensslCa({ name: "ed25519", keyAlg: ["ed25519"] });
  made.noSki = opensslCa({ name: "noski", ext: ["basicConstraints=critical,CA:TRUE", "subjectKeyIdentifier=none", "authorityKeyIdentifier=none"] });
  made.leaf = opensslCa({ name: "leaf", ext: ["basicConstraints=critical,CA:FALSE"] });
  made.noCertSign = opensslCa({ name: "nocertsign", ext: ["basicConstraints=critical,CA:TRUE", "keyUsage=critical,digitalSignature"] });
}, 60_000);

describe("caFromPem", () => {
  it.each([
    ["p256", "ecdsa"],
    ["rsa", "rsa"],
    ["ed25519", "ed25519"],
  ])("reads an openssl-made %s CA: subject, SKI, validity and key", (name, algorithm) => {
    const { certPem, keyPem } = made[name]!;
    const ca = caFromPem(certPem, keyPem);
    const ref = new x509.X509Certificate(certPem);
    expect(hexOf(ca.subjectDer)).toBe(hexOf(new Uint8Array(ref.subjectName.toArrayBuffer())));
    expect(hexOf(ca.subjectKeyId)).toBe(ref.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId);
    expect(ca.notBefore).toEqual(ref.notBefore);
    expect(ca.notAfter).toEqual(ref.notAfter);
    expect(ca.keyAlgorithm).toBe(algorithm);
    expect(new X509Certificate(ca.certDer).checkPrivateKey(ca.privateKey)).toBe(true);
    expect(ca.chainPem).toEqual([]);
  });

  it("computes the SKI as openssl does when the certificate has none", () => {
    const { certPem, keyPem } = made.noSki!;
    expect(opensslText(certPem)).not.toContain("Subject Key Identifier");
    const ca = caFromPem(certPem, keyPem);
    // openssl's "hash" method for the same key is SHA-1 of the subjectPublicKey bits.
    const withSki = run("openssl", ["req", "-x509", "-new", "-key", join(dir, "noski.key"), "-subj", "/CN=s", "-addext", "subjectKeyIdentifier=hash"]);
    const printed = /Subject Key Identifier: *\n\s*([0-9A-F:]+)/.exec(opensslText(withSki))![1]!;
    expect(hexOf(ca.subjectKeyId)).toBe(printed.replaceAll(":", "").toLowerCase());
  });

  it.each([
    ["a certificate without CA=true", () => made.leaf!, "CA_NOT_A_CA", "lacks BasicConstraints CA=true"],
    ["a CA whose KeyUsage lacks keyCertSign", () => made.noCertSign!, "CA_NOT_A_CA", "lacks keyCertSign"],
    ["a key of another CA", () => ({ certPem: made.p256!.certPem, keyPem: made.noSki!.keyPem }), "KEY_MISMATCH", "does not belong"],
    ["two certificates without the intermediates option", () => ({ certPem: made.p256!.certPem + made.rsa!.certPem, keyPem: made.p256!.keyPem }), "CERT_INVALID", "found 2"],
    ["a file without PEM", () => ({ certPem: "hello", keyPem: made.p256!.keyPem }), "PEM_INVALID", "no PEM block"],
    ["a certificate block holding garbage", () => ({ certPem: "-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n", keyPem: made.p256!.keyPem }), "CERT_INVALID", "CA certificate:"],
  ])("refuses %s", (_name, input, code, message) => {
    const { certPem, keyPem } = input();
    expect(() => caFromPem(certPem, keyPem)).toThrow(expect.objectContaining({ code, message: expect.stringContaining(message) }));
  });

  it("refuses a CSR given as the certificate", async () => {
    const request = await csr({ cn: "x" });
    expect(() => caFromPem(request.pem, made.p256!.keyPem)).toThrow(expect.objectContaining({ code: "PEM_LABEL" }));
  });

  it("keeps certificates after the CA as its chain when intermediates are allowed", () => {
    const ca = caFromPem(`${made.p256!.certPem}${made.rsa!.certPem}`, made.p256!.keyPem, { intermediates: true });
    expect(ca.chainPem).toHaveLength(1);
    expect(new X509Certificate(ca.chainPem[0]!).subject).toContain("CN=rsa");
  });
});

describe("loadCaFiles", () => {
  it("loads a certificate file and key file", async () => {
    writeFiles(dir, { "files.pem": made.rsa!.certPem, "files.key": made.rsa!.keyPem });
    const ca = await loadCaFiles({ certFile: join(dir, "files.pem"), keyFile: join(dir, "files.key") });
    expect(describeKey(ca.privateKey).bits).toBe(2048);
  });

  it("names the missing file", async () => {
    const call = loadCaFiles({ certFile: join(dir, "absent.pem"), keyFile: join(dir, "files.key") });
    await expect(call).rejects.toMatchObject({ code: "CA_INVALID", message: expect.stringContaining("absent.pem"), retryable: true });
  });

  it("names the files of a mismatched pair", async () => {
    writeFiles(dir, { "mm.pem": made.p256!.certPem, "mm.key": made.ed25519!.keyPem });
    const call = loadCaFiles({ certFile: join(dir, "mm.pem"), keyFile: join(dir, "mm.key") });
    await expect(call).rejects.toMatchObject({ code: "KEY_MISMATCH", message: expect.stringMatching(/mm\.key does not belong to .*mm\.pem/) });
  });
});

describe("generateCa", () => {
  it.each(KEY_TYPES.filter((t) => t !== "rsa3072" && t !== "rsa4096"))("generates a %s development CA that openssl accepts", async (keyType) => {
    const { certPem, keyPem, ca } = await generateCa({ commonName: `dev ${keyType}`, keyType, lifetimeSeconds: 86_400, now: T0 });
    writeFiles(dir, { "gen.pem": certPem });
    expect(run("openssl", ["verify", "-attime", String(T0.getTime() / 1000), "-CAfile", join(dir, "gen.pem"), join(dir, "gen.pem")])).toContain("OK");
    const text = opensslText(certPem);
    expect(text).toMatch(/Key Usage: critical\n\s*Digital Signature, Certificate Sign, CRL Sign/);
    expect(text).toMatch(/Basic Constraints: critical\n\s*CA:TRUE/);
    expect(text).toContain("Subject Key Identifier");
    expect(text).toContain(`Subject: CN = dev ${keyType}`);
    expect(ca.notBefore).toEqual(new Date(T0.getTime() - 300_000));
    expect(ca.notAfter).toEqual(new Date(T0.getTime() + 86_400_000));
    expect(run("openssl", ["pkey", "-noout", "-check"], keyPem)).toMatch(/valid/i);
  });

  it.each([
    [{ commonName: "" }, "expected `commonName` to be 1–64 characters, got \"\""],
    [{ keyType: "dsa" }, "expected `keyType` to be one of"],
    [{ lifetimeSeconds: 60 }, "expected `lifetimeSeconds` to be an integer ≥ 3600, got 60"],
  ])("validates its options: %j", async (override, message) => {
    const options = { commonName: "x", keyType: "p256", lifetimeSeconds: 86_400, now: T0, ...override } as GenerateCaOptions;
    await expect(generateCa(options)).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining(message) });
  });
});

import "reflect-metadata";
import { createHash, X509Certificate } from "node:crypto";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { parseCsr } from "../../src/pki/csr.js";
import { DerReader, Tag } from "../../src/pki/der.js";
import { issueCertificate, Issuer } from "../../src/pki/issue.js";
import { subjectPublicKeyBits } from "../../src/pki/keys.js";
import { computeValidity } from "../../src/pki/validity.js";
import { csr, type CsrOptions } from "../fixtures/csr.js";
import { opensslText, profile, T0, type ProfileOptions } from "./issuance-fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir, writeFiles } from "../fixtures/temp-dir.js";
import { run } from "../fixtures/process.js";

const dir = tempDir("issue-");
const DAY = 86_400;

async function issueWith(csrOptions: CsrOptions, profileOptions: ProfileOptions = {}, caKey: "p256" | "rsa2048" = "p256") {
  const { ca } = await testCa({ keyType: caKey });
  const parsed = parseCsr((await csr(csrOptions)).pem);
  const validity = computeValidity({ now: T0, expirationSeconds: DAY, maxDurationSeconds: 365 * DAY, caNotBefore: ca.notBefore, caNotAfter: ca.notAfter });
  return { ca, parsed, cert: new Issuer(ca).issue({ csr: parsed, profile: profile(profileOptions), validity }) };
}

function verifiesWithOpenssl(caPem: string, certPem: string): string {
  writeFiles(dir, { "ca.pem": caPem, "leaf.pem": certPem });
  return run("openssl", ["verify", "-attime", String(T0.getTime() / 1000), "-CAfile", join(dir, "ca.pem"), join(dir, "leaf.pem")]);
}

describe("Issuer", () => {
  it.each(["p256", "p384", "p521", "rsa2048", "ed25519"] as const)("issues a certificate from a %s CA that openssl verifies", async (caKey) => {
    const { ca, certPem } = await testCa({ keyType: caKey });
    const parsed = parseCsr((await csr({ cn: "system:node:a", o: ["system:nodes"], key: "p256" })).pem);
    const validity = { notBefore: new Date(T0.getTime() - 300_000), notAfter: new Date(T0.getTime() + 3600_000) };
    const cert = new Issuer(ca).issue({ csr: parsed, profile: profile(), validity });
    expect(verifiesWithOpenssl(certPem, cert.pem)).toContain("leaf.pem: OK");
    const expectedAlg = { p256: "ecdsa-with-SHA256", p384: "ecdsa-with-SHA384", p521: "ecdsa-with-SHA512", rsa2048: "sha256WithRSAEncryption", ed25519: "ED25519" }[caKey];
    expect(opensslText(cert.pem)).toContain(`Signature Algorithm: ${expectedAlg}`);
  });

  it.each([
    ["a client profile", { usages: ["digital signature", "key encipherment", "client auth"] }, ["Digital Signature, Key Encipherment", "TLS Web Client Authentication", "CA:FALSE"]],
    ["a serving profile", { usages: ["digital signature", "server auth"] }, ["Digital Signature", "TLS Web Server Authentication"]],
    ["every key usage bit", { usages: ["digital signature", "content commitment", "key encipherment", "data encipherment", "key agreement", "cert sign", "crl sign", "encipher only", "decipher only"] },
      ["Digital Signature, Non Repudiation, Key Encipherment, Data Encipherment, Key Agreement, Certificate Sign, CRL Sign, Encipher Only, Decipher Only"]],
    ["a CA profile with a path length", { usages: ["cert sign", "crl sign"], isCa: true, pathLen: 0 }, ["CA:TRUE, pathlen:0", "Certificate Sign, CRL Sign"]],
    ["a CA profile without a path length", { usages: ["cert sign"], isCa: true }, ["CA:TRUE\n"]],
  ] as const)("writes the extensions of %s", async (_name, profileOptions, expected) => {
    const { cert } = await issueWith({ cn: "x", dns: ["a.example"] }, profileOptions);
    const text = opensslText(cert.pem);
    for (const e of expected) expect(text).toContain(e);
    expect(text).toMatch(/X509v3 Basic Constraints: critical/);
    expect(text).toMatch(/X509v3 Key Usage: critical/);
  });

  it("omits KeyUsage and ExtKeyUsage when the profile has none", async () => {
    const { cert } = await issueWith({ cn: "x" }, { usages: [] });
    const text = opensslText(cert.pem);
    expect(text).not.toContain("X509v3 Key Usage");
    expect(text).not.toContain("X509v3 Extended Key Usage");
    expect(text).toContain("X509v3 Basic Constraints: critical");
  });

  it("copies the requested SANs verbatim only when the profile says so", async () => {
    const sans = { cn: "x", dns: ["a.example", "*.b.example"], ip: ["10.0.0.1", "2001:db8::1"], email: ["a@example.com"], uri: ["spiffe://c/d"] };
    const withSans = opensslText((await issueWith(sans)).cert.pem);
    expect(withSans).toContain("DNS:a.example, DNS:*.b.example, IP Address:10.0.0.1, IP Address:2001:DB8:0:0:0:0:0:1, email:a@example.com, URI:spiffe://c/d");
    expect(withSans).toMatch(/X509v3 Subject Alternative Name: *\n/);
    const without = opensslText((await issueWith(sans, { includeSans: false })).cert.pem);
    expect(without).not.toContain("Subject Alternative Name");
  });

  it("marks the SAN critical when the subject is empty", async () => {
    const { cert } = await issueWith({ dns: ["only-san.example"] });
    expect(opensslText(cert.pem)).toContain("X509v3 Subject Alternative Name: critical");
  });

  it("copies the subject and public key of the CSR byte for byte", async () => {
    const { cert, parsed } = await issueWith({ cn: "system:node:a", o: ["system:nodes", "b"], ou: ["u"], extraName: "C=DE" });
    const tbs = new DerReader(cert.der).sequence().sequence();
    tbs.next(); tbs.next(); tbs.next(); tbs.next(); tbs.next();
    expect(tbs.bytes(tbs.next(Tag.SEQUENCE))).toEqual(parsed.subject.der);
    expect(tbs.bytes(tbs.next(Tag.SEQUENCE))).toEqual(parsed.publicKey.spki);
  });

  it("copies only the extensions the profile permits and never a managed one", async () => {
    const custom = new x509.Extension("1.2.3.4.5", false, new Uint8Array([0x05, 0x00]));
    const other = new x509.Extension("1.2.3.4.6", true, new Uint8Array([0x05, 0x00]));
    const { cert } = await issueWith({ cn: "x", requestCa: true, extensions: [custom, other] }, { copyExtensions: ["1.2.3.4.5", "2.5.29.19"] });
    const parsed = new x509.X509Certificate(cert.pem);
    expect(parsed.getExtension("1.2.3.4.5")?.critical).toBe(false);
    expect(parsed.getExtension("1.2.3.4.6")).toBeNull();
    expect(parsed.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(parsed.extensions.filter((e) => e.type === "2.5.29.19")).toHaveLength(1);
  });

  it("sets SKI to the SHA-1 of the key bits and AKI to the CA's key identifier", async () => {
    const { cert, ca, parsed } = await issueWith({ cn: "x", key: "rsa2048" });
    const leaf = new x509.X509Certificate(cert.pem);
    const expectedSki = createHash("sha1").update(subjectPublicKeyBits(parsed.publicKey.spki)).digest("hex");
    expect(leaf.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toBe(expectedSki);
    expect(leaf.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(Buffer.from(ca.subjectKeyId).toString("hex"));
    const caCert = new x509.X509Certificate(ca.certPem);
    expect(caCert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId).toBe(Buffer.from(ca.subjectKeyId).toString("hex"));
  });

  it("draws positive 16-byte serials that do not repeat", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const issuer = new Issuer(ca);
    const parsed = parseCsr((await csr({ cn: "x" })).pem);
    const validity = { notBefore: T0, notAfter: new Date(T0.getTime() + 3600_000) };
    const serials = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const cert = issuer.issue({ csr: parsed, profile: profile(), validity });
      expect(cert.serialHex).toMatch(/^[0-7][0-9a-f]{31}$/);
      expect(cert.serialHex.startsWith("00")).toBe(false);
      expect(new X509Certificate(cert.der).serialNumber.toLowerCase()).toBe(cert.serialHex);
      serials.add(cert.serialHex);
    }
    expect(serials.size).toBe(500);
  });

  it.each([
    ["UTCTime before 2050", "2049-12-31T23:59:59Z", Tag.UTC_TIME, "491231235959Z"],
    ["GeneralizedTime from 2050", "2050-01-01T00:00:00Z", Tag.GENERALIZED_TIME, "20500101000000Z"],
  ])("encodes notAfter as %s", async (_name, notAfter, tag, text) => {
    const { ca } = await testCa({ keyType: "p256" });
    const parsed = parseCsr((await csr({ cn: "x" })).pem);
    const cert = new Issuer(ca).issue({ csr: parsed, profile: profile(), validity: { notBefore: T0, notAfter: new Date(notAfter) } });
    const tbs = new DerReader(cert.der).sequence().sequence();
    tbs.next(); tbs.next(); tbs.next(); tbs.next();
    const validity = tbs.sequence();
    validity.next(Tag.UTC_TIME);
    const t = validity.next();
    expect(t.tag).toBe(tag);
    expect(Buffer.from(cert.der.subarray(t.contentStart, t.end)).toString("latin1")).toBe(text);
    expect(new X509Certificate(cert.der).validTo).toContain(notAfter.slice(0, 4));
  });

  it("refuses a validity whose notAfter is not after notBefore", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    const parsed = parseCsr((await csr({ cn: "x" })).pem);
    const call = () => new Issuer(ca).issue({ csr: parsed, profile: profile(), validity: { notBefore: T0, notAfter: T0 } });
    expect(call).toThrow(expect.objectContaining({ code: "LIFETIME_INVALID" }));
  });

  it("issues through the one-call wrapper with the same result shape", async () => {
    const { ca, certPem } = await testCa({ keyType: "p384" });
    const parsed = parseCsr((await csr({ cn: "wrapper", key: "ed25519" })).pem);
    const validity = { notBefore: T0, notAfter: new Date(T0.getTime() + 7200_000) };
    const cert = issueCertificate({ ca, csr: parsed, profile: profile(), validity });
    expect(cert.notAfter).toEqual(validity.notAfter);
    expect(cert.pem).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
    expect(verifiesWithOpenssl(certPem, cert.pem)).toContain("OK");
    try {
      issueCertificate({ ca: undefined as never, csr: parsed, profile: profile(), validity });
      expect.unreachable();
    } catch (err) {
      expect(isPlatformError(err, "SIGNER_NOT_READY")).toBe(true);
    }
  });
});

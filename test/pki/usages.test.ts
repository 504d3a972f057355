// Seed usage strings → KeyUsage bits and ExtKeyUsage OIDs, cross-checked against openssl's encoding and names.
import "reflect-metadata";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { ExtKeyUsageOid, findDuplicateUsages, isKnownUsage, KeyUsageBit, keyUsageMask, KNOWN_USAGES, resolveUsages } from "../../src/pki/usages.js";
import { tempDir } from "../fixtures/temp-dir.js";

const SEED_ORDER = [
  "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
  "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
  "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
  "microsoft sgc", "netscape sgc",
];

// usage → [openssl keyUsage name | undefined, ExtKeyUsage OID | undefined, openssl's printed EKU name]
const TABLE: [string, string | undefined, string | undefined, string | undefined][] = [
  ["signing", "digitalSignature", undefined, undefined],
  ["digital signature", "digitalSignature", undefined, undefined],
  ["content commitment", "nonRepudiation", undefined, undefined],
  ["key encipherment", "keyEncipherment", undefined, undefined],
  ["key agreement", "keyAgreement", undefined, undefined],
  ["data encipherment", "dataEncipherment", undefined, undefined],
  ["cert sign", "keyCertSign", undefined, undefined],
  ["crl sign", "cRLSign", undefined, undefined],
  ["encipher only", "encipherOnly", undefined, undefined],
  ["decipher only", "decipherOnly", undefined, undefined],
  ["any", undefined, "2.5.29.37.0", "Any Extended Key Usage"],
  ["server auth", undefined, "1.3.6.1.5.5.7.3.1", "TLS Web Server Authentication"],
  ["client auth", undefined, "1.3.6.1.5.5.7.3.2", "TLS Web Client Authentication"],
  ["code signing", undefined, "1.3.6.1.5.5.7.3.3", "Code Signing"],
  ["email protection", undefined, "1.3.6.1.5.5.7.3.4", "E-mail Protection"],
  ["s/mime", undefined, "1.3.6.1.5.5.7.3.4", "E-mail Protection"],
  ["ipsec end system", undefined, "1.3.6.1.5.5.7.3.5", "IPSec End System"],
  ["ipsec tunnel", undefined, "1.3.6.1.5.5.7.3.6", "IPSec Tunnel"],
  ["ipsec user", undefined, "1.3.6.1.5.5.7.3.7", "IPSec User"],
  ["timestamping", undefined, "1.3.6.1.5.5.7.3.8", "Time Stamping"],
  ["ocsp signing", undefined, "1.3.6.1.5.5.7.3.9", "OCSP Signing"],
  ["microsoft sgc", undefined, "1.3.6.1.4.1.311.10.3.3", "Microsoft Server Gated Crypto"],
  ["netscape sgc", undefined, "2.16.840.1.113730.4.1", "Netscape Server Gated Crypto"],
];

const dir = tempDir("usages-test-");
const key = join(dir, "k.pem");
writeFileSync(key, execFileSync("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]), { mode: 0o600 });
const config = join(dir, "req.cnf");
writeFileSync(config, "[req]\ndistinguished_name=dn\n[dn]\n");

function opensslCert(ext: string): string {
  return execFileSync("openssl", ["req", "-x509", "-new", "-key", key, "-subj", "/CN=u", "-config", config, "-addext", ext]).toString();
}

describe("KNOWN_USAGES", () => {
  it("lists the 23 seed strings in seed order", () => {
    expect(KNOWN_USAGES).toEqual(SEED_ORDER);
    expect(Object.isFrozen(KNOWN_USAGES)).toBe(true);
  });

  it.each([["server auth", true], ["Server Auth", false], ["serverAuth", false], ["", false]] as const)(
    "recognises %j: %s",
    (value, known) => expect(isKnownUsage(value)).toBe(known),
  );
});

describe("resolveUsages", () => {
  it.each(TABLE.filter((row) => row[1] !== undefined))("maps %j to the KeyUsage bit openssl writes for %s", (usage, opensslName) => {
    const cert = new x509.X509Certificate(opensslCert(`keyUsage=${opensslName}`));
    const flags = cert.getExtension(x509.KeyUsagesExtension)!.usages as number;
    expect(resolveUsages([usage])).toEqual({ keyUsage: flags, extKeyUsage: [] });
  });

  it("maps every ExtKeyUsage usage to the OID openssl names as the seed says", () => {
    const rows = TABLE.filter((row) => row[2] !== undefined);
    const oids = [...new Set(rows.map((row) => row[2]!))];
    const text = execFileSync("openssl", ["x509", "-noout", "-ext", "extendedKeyUsage"], { input: opensslCert(`extendedKeyUsage=${oids.join(",")}`) }).toString();
    for (const [usage, , oid, printed] of rows) {
      expect(resolveUsages([usage])).toEqual({ keyUsage: 0, extKeyUsage: [oid] });
      expect(text).toContain(printed);
    }
  });

  it("numbers KeyUsage bits as RFC 5280 does", () => {
    expect(Object.entries(KeyUsageBit)).toEqual([
      ["digitalSignature", 0], ["contentCommitment", 1], ["keyEncipherment", 2], ["dataEncipherment", 3], ["keyAgreement", 4],
      ["keyCertSign", 5], ["cRLSign", 6], ["encipherOnly", 7], ["decipherOnly", 8],
    ]);
    expect(keyUsageMask("decipherOnly")).toBe(256);
  });

  it("resolves a typical client request and collapses duplicates in request order", () => {
    expect(resolveUsages(["client auth", "digital signature", "key encipherment", "signing", "server auth", "client auth", "s/mime", "email protection"])).toEqual({
      keyUsage: keyUsageMask("digitalSignature") | keyUsageMask("keyEncipherment"),
      extKeyUsage: [ExtKeyUsageOid.clientAuth, ExtKeyUsageOid.serverAuth, ExtKeyUsageOid.emailProtection],
    });
  });

  it("resolves an empty list to nothing", () => {
    expect(resolveUsages([])).toEqual({ keyUsage: 0, extKeyUsage: [] });
  });

  it.each(["Digital Signature", "serverAuth", "digital  signature", "sign"])("refuses the unknown usage %j, listing the allowed ones", (usage) => {
    try {
      resolveUsages(["client auth", usage]);
      expect.unreachable();
    } catch (err) {
      expect(isPlatformError(err, "USAGE_UNKNOWN")).toBe(true);
      expect((err as Error).message).toContain(`unknown usage ${JSON.stringify(usage)}; allowed: "signing", "digital signature"`);
      expect((err as Error).message).toContain('"netscape sgc"');
    }
  });
});

describe("findDuplicateUsages", () => {
  it.each([
    [["a", "b"], []],
    [["client auth", "server auth", "client auth", "client auth", "server auth"], ["client auth", "server auth"]],
    [["signing", "digital signature"], []],
  ])("finds the repeats in %j", (usages, duplicates) => {
    expect(findDuplicateUsages(usages)).toEqual(duplicates);
  });
});

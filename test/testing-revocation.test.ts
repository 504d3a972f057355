// platform-ca/testing revocation: ca.revoke and ca.crl give a CRL that openssl verifies and enforces.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createTestAuthority } from "../src/testing.js";

const dir = mkdtempSync(join(tmpdir(), "testing-crl-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string | Uint8Array) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const openssl = (...args: string[]) => spawnSync("openssl", args, { encoding: "utf8" });
const serialOf = (pem: string) => execFileSync("openssl", ["x509", "-noout", "-serial"], { input: pem, encoding: "utf8" }).trim().replace("serial=", "");

describe.each(["p256", "rsa2048", "ed25519"] as const)("ca.revoke and ca.crl (%s CA)", (keyType) => {
  it("lists the revoked serial with its reason in a CRL openssl verifies, and openssl -crl_check refuses the certificate", async () => {
    let now = new Date();
    const ca = await createTestAuthority({ keyType, now: () => now });
    const alice = await ca.issueClient({ cn: "alice" });
    const bob = await ca.issueClient({ cn: "bob" });
    const carol = await ca.issueClient({ cn: "carol", lifetimeSeconds: 3600 });
    ca.revoke(alice, "keyCompromise");
    ca.revoke(carol.certPem, "superseded");
    const crl = await ca.crl();
    const caFile = file(`ca-${keyType}.pem`, ca.caPem);
    const derFile = file(`crl-${keyType}.der`, crl.der);
    const verified = openssl("crl", "-inform", "DER", "-in", derFile, "-noout", "-text", "-verify", "-CAfile", caFile);
    expect(verified.stderr).toContain("verify OK");
    expect(verified.stdout).toContain("Version 2 (0x1)");
    expect(verified.stdout).toMatch(/X509v3 CRL Number: \n\s+1\n/);
    expect(verified.stdout).toMatch(new RegExp(`Serial Number: ${serialOf(alice.certPem)}\\s+Revocation Date: .*\\s+CRL entry extensions:\\s+X509v3 CRL Reason Code: \\n\\s+Key Compromise`));
    expect(verified.stdout).toContain(serialOf(carol.certPem));
    expect(verified.stdout).not.toContain(serialOf(bob.certPem));

    const crlPem = file(`crl-${keyType}.pem`, crl.pem);
    const check = (pem: string) => openssl("verify", "-crl_check", "-CRLfile", crlPem, "-CAfile", caFile, file(`leaf-${keyType}.pem`, pem));
    const refused = check(alice.certPem);
    expect(refused.status).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain("certificate revoked");
    expect(check(bob.certPem).status).toBe(0);

    // Two hours later carol's certificate has expired and leaves the list; the CRL number goes up.
    now = new Date(now.getTime() + 2 * 3600_000);
    const later = openssl("crl", "-inform", "DER", "-in", file(`crl2-${keyType}.der`, (await ca.crl({ nextUpdateSeconds: 600 })).der), "-noout", "-text");
    expect(later.stdout).toMatch(/X509v3 CRL Number: \n\s+2\n/);
    expect(later.stdout).toContain(serialOf(alice.certPem));
    expect(later.stdout).not.toContain(serialOf(carol.certPem));
  });
});

describe("ca.revoke refuses what it cannot revoke", () => {
  it("refuses a second revocation, an unknown reason and another CA's certificate", async () => {
    const ca = await createTestAuthority();
    const other = await createTestAuthority();
    const alice = await ca.issueClient({ cn: "alice" });
    expect(() => ca.revoke(alice, "certificateHold" as never)).toThrow(/expected `reason` to be one of unspecified, keyCompromise/);
    ca.revoke(alice);
    expect(() => ca.revoke(alice.certPem, "keyCompromise")).toThrow(/is already revoked/);
    const foreign = await other.issueClient({ cn: "x" });
    expect(() => ca.revoke(foreign)).toThrow("the certificate was not issued by this test CA");
    const empty = openssl("crl", "-in", file("empty.pem", (await other.crl()).pem), "-noout", "-text");
    expect(empty.stdout).toContain("No Revoked Certificates.");
  });
});

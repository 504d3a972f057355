// CRL Distribution Points in issued certificates: off by default, one constant URI per signer when configured.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CaSigner, type CaSignerOptions } from "../../signers/ca-signer.js";
import { groupNames } from "../../src/api/group.js";
import { signersFromConfig } from "../../src/controller/controllers/signers-from-config.js";
import { silentLogger } from "../../src/logger.js";
import { NOW, signingRequest, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { tryRun } from "../fixtures/process.js";

const NAME = "example.com/base";
const generated = await testCa(SIGNERS_CA);
const { ca } = generated;
const dir = tempDir("crl-dp-");

const signer = (options: Partial<CaSignerOptions> = {}) => new CaSigner({ signerName: NAME, ca, check: () => undefined, now: () => NOW, ...options });

/** `openssl x509 -text` of the leaf the signer issues for a client request. */
async function issuedText(s: Pick<CaSigner, "sign" | "signerName">, file: string): Promise<string> {
  const chain = await s.sign(await signingRequest({ signerName: s.signerName, cn: "client", usages: ["digital signature", "client auth"] }), NOW);
  writeFileSync(join(dir, file), chain);
  const shown = tryRun("openssl", ["x509", "-noout", "-text", "-in", join(dir, file)]);
  expect(shown.status).toBe(0);
  return shown.out;
}

describe("CRL Distribution Points", () => {
  it("are not written unless configured", async () => {
    expect(await issuedText(signer(), "plain.pem")).not.toContain("CRL Distribution Points");
  });

  it("carry the configured URI with the signer's name substituted, and the chain still verifies", async () => {
    const text = await issuedText(signer({ crlDistributionPointUrl: "https://ca.example:10257/crl/{signerName}" }), "dp.pem");
    expect(text).toMatch(/X509v3 CRL Distribution Points:\s+Full Name:\s+URI:https:\/\/ca\.example:10257\/crl\/example\.com\/base\n/);
    writeFileSync(join(dir, "ca.pem"), ca.certPem);
    expect(tryRun("openssl", ["verify", "-attime", String(NOW.getTime() / 1000), "-CAfile", join(dir, "ca.pem"), join(dir, "dp.pem")])).toEqual({
      status: 0,
      out: expect.stringContaining("dp.pem: OK"),
    });
  });

  it("reach the built-in signers from the controller configuration", async () => {
    const names = groupNames();
    const [certFile, keyFile] = [join(dir, "cluster-ca.pem"), join(dir, "cluster-ca.key")];
    writeFileSync(certFile, generated.certPem);
    writeFileSync(keyFile, generated.keyPem, { mode: 0o600 });
    const setup = await signersFromConfig({
      names,
      signingFiles: new Map([[names.signers.apiserverClient, { certFile, keyFile }]]),
      maxDurationSeconds: 86_400,
      logger: silentLogger(),
      now: () => NOW,
      crlDistributionPointUrl: "http://127.0.0.1:10257/crl/{signerName}",
    });
    try {
      const text = await issuedText(setup.registry.get(names.signers.apiserverClient), "builtin.pem");
      expect(text).toContain(`URI:http://127.0.0.1:10257/crl/${names.signers.apiserverClient}\n`);
    } finally {
      setup.stop();
    }
  });

  it.each([
    ["a scheme other than http(s)", "ldap://ca.example/crl"],
    ["a URL that does not parse", "https://"],
    ["a space", "https://ca.example/a b"],
    ["a non-ASCII character", "https://ca.example/é"],
  ])("refuse %s", (_, url) => {
    expect(() => signer({ crlDistributionPointUrl: url })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("crlDistributionPointUrl") }));
  });
});

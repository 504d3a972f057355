// CA keys generated in SoftHSM2 by `platform-ca hsm init-ca`: issuance through the token, verified by OpenSSL and GnuTLS.
import { verify, X509Certificate } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createBuiltinSigners } from "../../signers/builtins.js";
import { loadPolicySigner } from "../../signers/policy.js";
import type { Signer } from "../../signers/signer.js";
import { CaSource } from "../../src/pki/ca-source.js";
import { TokenKey } from "../../src/pki/pkcs11-ca.js";
import { runCli } from "../cli/fixtures.js";
import { pemBlocks, rejection, signingRequest, SIGNERS } from "../signers/fixtures.js";
import { tryRun } from "../fixtures/process.js";
import { privateKeyFiles, SOFTHSM_MODULE, softhsmToken } from "./softhsm.js";

const token = softhsmToken("token-ca");
const KEYS = [
  { keyType: "ecdsa-p256", flags: [], sigalg: /ecdsa-with-SHA256/ },
  { keyType: "ecdsa-p384", flags: [], sigalg: /ecdsa-with-SHA384/ },
  { keyType: "rsa-2048", flags: [], sigalg: /sha256WithRSAEncryption/ },
  { keyType: "rsa-2048", flags: ["--rsa-pss"], sigalg: /rsassaPss/ },
] as const;
const CLIENT = ["digital signature", "client auth"];

function certFile(object: string): string {
  return join(token.dir, `${object}.pem`);
}

beforeAll(async () => {
  for (const [i, k] of KEYS.entries()) {
    const r = await runCli(["hsm", "init-ca", "--key-uri", token.uri(`ca-${i}`), "--subject", `CN=HSM test CA ${i}`, "--key-type", k.keyType, ...k.flags, "--out", certFile(`ca-${i}`)], { env: token.env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  }
}, 120_000);

async function signerFor(i: number): Promise<{ signer: Signer; source: CaSource }> {
  const source = new CaSource({ certFile: certFile(`ca-${i}`), keyFile: token.uri(`ca-${i}`) });
  await source.refresh();
  if (source.lastError) throw source.lastError;
  const [signer] = createBuiltinSigners({ caPerSigner: { apiserverClient: source } });
  return { signer: signer!, source };
}

describe("a CA generated in the token", () => {
  it.each(KEYS.map((k, i) => [`${k.keyType} ${k.flags.join(" ")}`, i] as const))("issues certificates that openssl and certtool verify: %s", async (_, i) => {
    const { signer, source } = await signerFor(i);
    expect(source.current().privateKey).toBeUndefined();
    const chain = await signer.sign(await signingRequest({ signerName: SIGNERS.apiserverClient, cn: `user-${i}`, usages: CLIENT }), new Date());
    const leaf = join(token.dir, `leaf-${i}.pem`);
    writeFileSync(leaf, pemBlocks(chain)[0]!);
    const openssl = tryRun("openssl", ["verify", "-x509_strict", "-CAfile", certFile(`ca-${i}`), leaf]);
    expect(openssl.out).toMatch(/: OK\s*$/);
    expect(openssl.status).toBe(0);
    const gnutls = tryRun("certtool", ["--verify", "--load-ca-certificate", certFile(`ca-${i}`), "--infile", leaf]);
    expect(gnutls.out).toMatch(/Chain verification output: Verified/);
    expect(gnutls.status).toBe(0);
    expect(tryRun("openssl", ["x509", "-in", leaf, "-noout", "-text"]).out).toMatch(KEYS[i]!.sigalg);
  });

  it("loads through a policy file whose issuer.keyFile is a pkcs11: URI", async () => {
    const policy = join(token.dir, "policy.yaml");
    writeFileSync(policy, `signerName: example.com/hsm\nissuer:\n  certFile: ca-0.pem\n  keyFile: "${token.uri("ca-0")}"\nusages:\n  permitted: [digital signature, client auth]\n`);
    const { signer } = await loadPolicySigner(policy);
    const chain = await signer.sign(await signingRequest({ signerName: "example.com/hsm", cn: "svc", usages: CLIENT }), new Date());
    writeFileSync(join(token.dir, "policy-leaf.pem"), chain);
    expect(tryRun("openssl", ["verify", "-CAfile", certFile("ca-0"), join(token.dir, "policy-leaf.pem")]).status).toBe(0);
  });

  it("keeps no private key in any file", () => {
    expect(privateKeyFiles(token.dir)).toEqual([]);
  });

  it("signs 200 certificates without blocking the event loop", async () => {
    const { signer } = await signerFor(2);
    const requests = await Promise.all(Array.from({ length: 200 }, (_, n) => signingRequest({ signerName: SIGNERS.apiserverClient, cn: `load-${n}`, usages: CLIENT })));
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 1);
    const started = performance.now();
    const chains = await Promise.all(requests.map((r) => signer.sign(r, new Date())));
    const elapsed = performance.now() - started;
    clearInterval(timer);
    expect(new Set(chains).size).toBe(200);
    // A synchronous token call would hold the loop for the whole batch and the timer would not fire at all.
    expect(ticks).toBeGreaterThan(Math.min(10, elapsed / 20));
  }, 60_000);

  it("reconnects when the token's sessions are closed under it", async () => {
    const { signer } = await signerFor(0);
    const request = await signingRequest({ signerName: SIGNERS.apiserverClient, cn: "again", usages: CLIENT });
    await signer.sign(request, new Date());
    const key = await TokenKey.open(token.uri("ca-0"));
    // Closing every session of the slot logs the application out: the signer must log in again and retry.
    key.token.module.C_CloseAllSessions(key.token.module.C_GetSlotList(true)[0]!);
    expect(pemBlocks(await signer.sign(request, new Date()))).toHaveLength(1);
    // Keys of one token share its session pool and login.
    expect((await TokenKey.open(token.uri("ca-1"))).token).toBe(key.token);
  });
});

describe("ECDSA signatures from the token", () => {
  it.each([[0, "P-256", "sha256"], [1, "P-384", "sha384"]] as const)("are DER that OpenSSL verifies, leading zeros and high bits included: %s %s", async (i, curve, hash) => {
    const key = await TokenKey.open(token.uri(`ca-${i}`));
    const signer = key.signer({ kind: "ecdsa", curve });
    const publicKey = new X509Certificate(readFileSync(certFile(`ca-${i}`))).publicKey;
    const signatures = await Promise.all(Array.from({ length: 512 }, async (_, n) => {
      const data = Buffer.from(`challenge ${n}`);
      return { data, value: Buffer.from(await signer.sign(data)) };
    }));
    // r or s shorter than the curve, or with the top bit set (a 0x00 pad), each happen within 512 signatures.
    const lengths = new Set(signatures.map((s) => s.value.length));
    expect(lengths.size).toBeGreaterThan(1);
    for (const { data, value } of signatures) expect(verify(hash, data, publicKey, value)).toBe(true);
  });
});

describe("bad token input is one clear line", () => {
  const initCa = (uri: string) => runCli(["hsm", "init-ca", "--key-uri", uri, "--subject", "CN=x", "--out", join(token.dir, "bad.pem")], { env: token.env });
  const oneLine = (stderr: string) => stderr.trimEnd().split("\n");

  it.each([
    ["a malformed URI", `pkcs11:token=${token.label};object=%zz`, /^error: invalid PKCS#11 URI .*bad percent-escape "%zz"$/],
    ["a URI without a key name", `pkcs11:token=${token.label}`, /^error: invalid PKCS#11 URI .*object= \(label\) or id=$/],
    ["a missing module", `pkcs11:token=${token.label};object=m?module-path=/nonexistent/libnone.so&pin-value=4321`, /^error: cannot load the PKCS#11 module \/nonexistent\/libnone\.so: /],
    ["a wrong PIN", `pkcs11:token=${token.label};object=w?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=0000`, /^error: pkcs11:.*pin-value=\*\*\*: login to token failed: wrong PIN$/],
    ["an unknown token", "pkcs11:token=nope;object=w?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-value=4321", /^error: .*no token matches the URI \(tokens present: .*"token-ca"/],
    ["a key that already exists", token.uri("ca-0"), /^error: .*already holds a private key with this object\/id/],
  ])("init-ca refuses %s", async (_, uri, message) => {
    const r = await initCa(uri);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toHaveLength(1);
    expect(r.stderr.trimEnd()).toMatch(message);
  });

  it("says how to enable pkcs11js when it cannot be loaded", async () => {
    const hooks = join(token.dir, "no-pkcs11js.mjs");
    writeFileSync(hooks, [
      'export async function resolve(specifier, context, next) {',
      '  if (specifier === "pkcs11js") throw Object.assign(new Error("Cannot find package \'pkcs11js\'"), { code: "ERR_MODULE_NOT_FOUND" });',
      "  return next(specifier, context);",
      "}",
    ].join("\n"));
    const register = join(token.dir, "register.mjs");
    writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(`file://${hooks}`)});\n`);
    const r = await runCli(["hsm", "init-ca", "--key-uri", token.uri("unused"), "--subject", "CN=x", "--out", join(token.dir, "none.pem")], { env: { ...token.env, NODE_OPTIONS: `--import ${register}` } });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error: pkcs11: keys need the optional package pkcs11js, which cannot be loaded (Cannot find package 'pkcs11js'); enable it with `npm install pkcs11js` (needs a C++ compiler)\n");
  });

  it("a signer whose URI names a missing object does not load, with HSM_KEY_NOT_FOUND", async () => {
    const source = new CaSource({ certFile: certFile("ca-0"), keyFile: token.uri("no-such-key") });
    await source.refresh();
    expect([source.lastError?.code, source.lastError?.message]).toEqual(["HSM_KEY_NOT_FOUND", expect.stringMatching(/object=no-such-key.*: no private key in the token matches/)]);
    expect((await rejection(Promise.resolve().then(() => source.current()))).code).toBe("CA_INVALID");
  });

  it("refuses a second PIN for a token already logged in, which it could not check", async () => {
    const error = await rejection(TokenKey.open(`pkcs11:token=${token.label};object=ca-0?module-path=${SOFTHSM_MODULE}&pin-value=0000`));
    expect([error.code, error.message]).toEqual(["HSM_LOGIN_FAILED", expect.stringMatching(/pin-value=\*\*\*: the token is already in use with another PIN in this process/)]);
  });

  it("a token key that is not the certificate's is KEY_MISMATCH", async () => {
    const source = new CaSource({ certFile: certFile("ca-0"), keyFile: token.uri("ca-1") });
    await source.refresh();
    expect(source.lastError?.code).toBe("KEY_MISMATCH");
  });
});

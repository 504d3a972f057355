import { execFileSync } from "node:child_process";
import { generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { nativeCrypto, type NativeHashBits } from "../../src/pki/native.js";
import { parseCsr } from "../../src/pki/csr.js";
import { generateCa } from "../../src/pki/ca.js";
import { Issuer } from "../../src/pki/issue.js";
import { resolveUsages } from "../../src/pki/usages.js";
import { csr } from "../fixtures/csr.js";

// The accelerator is optional at install time, but this repository builds it (npm ci runs node-gyp):
// its absence here means the build broke, which must not go unnoticed.
const native = nativeCrypto!;

const curves = [
  { bits: 256, curve: "prime256v1", hash: "sha256", hashBits: 256 },
  { bits: 384, curve: "secp384r1", hash: "sha384", hashBits: 384 },
  { bits: 521, curve: "secp521r1", hash: "sha512", hashBits: 512 },
] as const;

function ecSample(curve: string, hash: string) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: curve });
  const jwk = publicKey.export({ format: "jwk" });
  const point = new Uint8Array(Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]));
  const data = new Uint8Array(randomBytes(200));
  const signature = new Uint8Array(sign(hash, data, privateKey));
  return { privateKey, publicKey, point, data, signature };
}

function rsaSample(hash: string) {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = publicKey.export({ format: "jwk" });
  const data = new Uint8Array(randomBytes(300));
  return {
    privateKey,
    publicKey,
    n: new Uint8Array(Buffer.from(jwk.n!, "base64url")),
    e: new Uint8Array(Buffer.from(jwk.e!, "base64url")),
    data,
    signature: new Uint8Array(sign(hash, data, privateKey)),
  };
}

const flip = (bytes: Uint8Array, at: number, bit = 1): Uint8Array => {
  const copy = bytes.slice();
  copy[at]! ^= bit;
  return copy;
};
const pkcs8 = (key: KeyObject) => new Uint8Array(key.export({ type: "pkcs8", format: "der" }));
const loose = (fn: unknown) => fn as (...args: unknown[]) => unknown;

describe("native accelerator", () => {
  it("is built and loaded with all four functions", () => {
    expect(nativeCrypto).toBeDefined();
    for (const name of ["verifyEcdsa", "verifyRsa", "signingKey", "sign"] as const) expect(typeof native[name]).toBe("function");
  });

  it.each(curves)("verifyEcdsa accepts a valid P-$bits signature and refuses a changed message or signature", ({ bits, curve, hash, hashBits }) => {
    for (let i = 0; i < 10; i++) {
      const s = ecSample(curve, hash);
      expect(native.verifyEcdsa(bits, s.point, hashBits, s.data, s.signature)).toBe(true);
      expect(native.verifyEcdsa(bits, s.point, hashBits, flip(s.data, i), s.signature)).toBe(false);
      expect(native.verifyEcdsa(bits, s.point, hashBits, s.data, flip(s.signature, s.signature.length - 1 - (i % 8), 0x10))).toBe(false);
    }
  });

  it("verifyEcdsa answers null for a point off the curve, unknown sizes and wrong arguments, false for an empty signature", () => {
    const s = ecSample("prime256v1", "sha256");
    expect(native.verifyEcdsa(256, flip(s.point, 40), 256, s.data, s.signature)).toBeNull();
    expect(native.verifyEcdsa(255, s.point, 256, s.data, s.signature)).toBeNull();
    expect(native.verifyEcdsa(256, s.point, 224 as NativeHashBits, s.data, s.signature)).toBeNull();
    expect(loose(native.verifyEcdsa)(256, "x", 256, s.data, s.signature)).toBeNull();
    expect(loose(native.verifyEcdsa)(256, s.point)).toBeNull();
    expect(native.verifyEcdsa(256, s.point, 256, s.data, new Uint8Array(0))).toBe(false);
    // The hash size is part of the check: the same signature under SHA-384 does not verify.
    expect(native.verifyEcdsa(256, s.point, 384, s.data, s.signature)).toBe(false);
  });

  it.each([
    ["sha256", 256],
    ["sha384", 384],
    ["sha512", 512],
  ] as const)("verifyRsa accepts a valid %s PKCS#1 v1.5 signature and refuses changes", (hash, hashBits) => {
    const s = rsaSample(hash);
    expect(native.verifyRsa(s.n, s.e, hashBits, s.data, s.signature)).toBe(true);
    expect(native.verifyRsa(s.n, s.e, hashBits, flip(s.data, 3), s.signature)).toBe(false);
    expect(native.verifyRsa(s.n, s.e, hashBits, s.data, flip(s.signature, 100))).toBe(false);
    expect(native.verifyRsa(flip(s.n, 10), s.e, hashBits, s.data, s.signature)).toBe(false);
    expect(native.verifyRsa(s.n, s.e, hashBits, s.data, s.signature.subarray(1))).toBe(false);
    expect(native.verifyRsa(s.n, new Uint8Array(9), hashBits, s.data, s.signature)).toBeNull();
    expect(loose(native.verifyRsa)(s.n, s.e, 256)).toBeNull();
  });

  it.each(curves)("sign with a P-$bits CA key gives signatures node:crypto verifies, each one different", ({ curve, hash, hashBits }) => {
    const s = ecSample(curve, hash);
    const key = native.signingKey(pkcs8(s.privateKey))!;
    expect(key).not.toBeNull();
    const a = native.sign(key, hashBits, s.data)!;
    const b = native.sign(key, hashBits, s.data)!;
    expect(verify(hash, s.data, s.publicKey, a)).toBe(true);
    expect(verify(hash, s.data, s.publicKey, b)).toBe(true);
    expect(Buffer.compare(a, b)).not.toBe(0); // ECDSA draws a fresh nonce per signature
    expect(verify(hash, flip(s.data, 0), s.publicKey, a)).toBe(false);
  });

  it("sign with an RSA CA key is byte-identical to node:crypto (PKCS#1 v1.5 is deterministic)", () => {
    const s = rsaSample("sha256");
    const key = native.signingKey(pkcs8(s.privateKey))!;
    expect(Buffer.from(native.sign(key, 256, s.data)!)).toEqual(sign("sha256", s.data, s.privateKey));
    expect(Buffer.from(native.sign(key, 512, s.data)!)).toEqual(sign("sha512", s.data, s.privateKey));
  });

  it("signingKey answers null for Ed25519 and garbage; sign answers null for a wrong handle or hash", () => {
    const ed = generateKeyPairSync("ed25519").privateKey;
    expect(native.signingKey(pkcs8(ed))).toBeNull();
    expect(native.signingKey(new Uint8Array(randomBytes(64)))).toBeNull();
    expect(loose(native.signingKey)("not bytes")).toBeNull();
    const key = native.signingKey(pkcs8(ecSample("prime256v1", "sha256").privateKey))!;
    expect(loose(native.sign)({}, 256, new Uint8Array(3))).toBeNull();
    expect(native.sign(key, 1 as NativeHashBits, new Uint8Array(3))).toBeNull();
  });

  it.each(["p256", "p384", "p521", "rsa2048"] as const)("gives parseCsr the same verdict as node:crypto for %s CSRs", async (key) => {
    const f = await csr({ cn: "native", key, freshKey: true });
    expect(parseCsr(f.der).subject.commonName).toBe("native");
    expect(() => parseCsr(flip(f.der, f.der.length - 3))).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
  });
});

// The same checks through dist/ in a process with PLATFORM_CA_NATIVE=0: CSR verdicts, and certificates signed by
// node:crypto for ECDSA and RSA CAs that verify against their CA.
describe("node:crypto fallback", () => {
  it("verifies and refuses CSRs and signs certificates with the accelerator switched off (PLATFORM_CA_NATIVE=0)", async () => {
    const good = await csr({ cn: "fallback", key: "p256", freshKey: true });
    const goodRsa = await csr({ cn: "fallback-rsa", key: "rsa2048", freshKey: true });
    const dist = (m: string) => JSON.stringify(new URL(`../../dist/src/pki/${m}`, import.meta.url).href);
    const script = `
      const { parseCsr } = await import(${dist("csr.js")});
      const { nativeCrypto } = await import(${dist("native.js")});
      const { generateCa } = await import(${dist("ca.js")});
      const { Issuer } = await import(${dist("issue.js")});
      const { resolveUsages } = await import(${dist("usages.js")});
      const { X509Certificate } = await import("node:crypto");
      const csr = (i) => Buffer.from(process.argv[i], "base64");
      const out = { native: typeof nativeCrypto, cn: parseCsr(csr(1)).subject.commonName, rsa: parseCsr(csr(2)).subject.commonName };
      const bad = csr(1); bad[bad.length - 3] ^= 1;
      try { parseCsr(bad); out.bad = "accepted"; } catch (e) { out.bad = e.code; }
      const now = new Date();
      for (const keyType of ["p256", "rsa2048"]) {
        const { ca } = await generateCa({ commonName: "fallback " + keyType, keyType, lifetimeSeconds: 3600, now });
        const profile = { usages: resolveUsages(["digital signature", "client auth"]), isCa: false, includeSans: true };
        const cert = new Issuer(ca).issue({ csr: parseCsr(csr(1)), profile, validity: { notBefore: now, notAfter: new Date(now.getTime() + 60000) } });
        out[keyType] = new X509Certificate(cert.der).verify(new X509Certificate(ca.certPem).publicKey);
      }
      console.log(JSON.stringify(out));`;
    const b64 = (der: Uint8Array) => Buffer.from(der).toString("base64");
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, b64(good.der), b64(goodRsa.der)], {
      env: { ...process.env, PLATFORM_CA_NATIVE: "0" },
    }).toString();
    expect(JSON.parse(out)).toEqual({ native: "undefined", cn: "fallback", rsa: "fallback-rsa", bad: "CSR_SIGNATURE", p256: true, rsa2048: true });
  });

  it("issues certificates that verify against the CA with the accelerator on, for ECDSA and RSA CAs", async () => {
    const f = await csr({ cn: "accelerated", key: "p256", freshKey: true });
    const now = new Date();
    for (const keyType of ["p256", "p384", "rsa2048", "ed25519"] as const) {
      const { ca } = await generateCa({ commonName: `accelerated ${keyType}`, keyType, lifetimeSeconds: 3600, now });
      const profile = { usages: resolveUsages(["digital signature", "client auth"]), isCa: false, includeSans: true };
      const cert = new Issuer(ca).issue({ csr: parseCsr(f.der), profile, validity: { notBefore: now, notAfter: new Date(now.getTime() + 60_000) } });
      const { X509Certificate } = await import("node:crypto");
      expect(new X509Certificate(cert.der).verify(ca.publicKey), keyType).toBe(true);
    }
  });
});

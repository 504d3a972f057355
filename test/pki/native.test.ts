import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { nativeEcdsaVerify } from "../../src/pki/native.js";
import { parseCsr } from "../../src/pki/csr.js";
import { csr } from "../fixtures/csr.js";

// The accelerator is optional at install time, but this repository builds it (npm ci runs node-gyp):
// its absence here means the build broke, which must not go unnoticed.
const verify = nativeEcdsaVerify!;

const curves = [
  { bits: 256, curve: "prime256v1", hash: "sha256" },
  { bits: 384, curve: "secp384r1", hash: "sha384" },
  { bits: 521, curve: "secp521r1", hash: "sha512" },
] as const;

function sample(curve: string, hash: string) {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: curve });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const jwk = publicKey.export({ format: "jwk" });
  const x = Buffer.from(jwk.x!, "base64url");
  const y = Buffer.from(jwk.y!, "base64url");
  const point = new Uint8Array(Buffer.concat([Buffer.from([4]), x, y]));
  const data = randomBytes(200);
  const signature = new Uint8Array(sign(hash, data, privateKey));
  const digest = new Uint8Array(createHash(hash).update(data).digest());
  return { spki, point, data, signature, digest };
}

describe("native ECDSA verifier", () => {
  it("is built and loaded", () => {
    expect(typeof nativeEcdsaVerify).toBe("function");
  });

  it.each(curves)("accepts a valid P-$bits signature and refuses a changed digest or signature", ({ bits, curve, hash }) => {
    for (let i = 0; i < 20; i++) {
      const s = sample(curve, hash);
      expect(verify(bits, s.point, s.digest, s.signature)).toBe(true);
      const digest = s.digest.slice();
      digest[i % digest.length]! ^= 1;
      expect(verify(bits, s.point, digest, s.signature)).toBe(false);
      const sig = s.signature.slice();
      sig[sig.length - 1 - (i % 8)]! ^= 0x10;
      expect(verify(bits, s.point, s.digest, sig)).toBe(false);
    }
  });

  it("answers null for a point that is not on the curve, so node:crypto decides", () => {
    const s = sample("prime256v1", "sha256");
    const point = s.point.slice();
    point[40]! ^= 1;
    expect(verify(256, point, s.digest, s.signature)).toBeNull();
  });

  it("answers null for unsupported curve sizes and wrong argument types instead of crashing", () => {
    const s = sample("prime256v1", "sha256");
    expect(verify(255, s.point, s.digest, s.signature)).toBeNull();
    expect((verify as unknown as (...a: unknown[]) => unknown)(256, "x", s.digest, s.signature)).toBeNull();
    expect((verify as unknown as (...a: unknown[]) => unknown)(256, s.point)).toBeNull();
    expect(verify(256, s.point, s.digest, new Uint8Array(0))).toBe(false);
  });

  it.each(["p256", "p384", "p521"] as const)("gives parseCsr the same verdict as node:crypto for %s CSRs", async (key) => {
    const f = await csr({ cn: "native", key }, true);
    expect(parseCsr(f.der).subject.commonName).toBe("native");
    const broken = f.der.slice();
    broken[broken.length - 3]! ^= 0x01;
    expect(() => parseCsr(broken)).toThrow(expect.objectContaining({ code: "CSR_SIGNATURE" }));
  });
});

describe("node:crypto fallback", () => {
  it("verifies and refuses CSRs with the accelerator switched off (PLATFORM_CA_NATIVE=0)", async () => {
    const { execFileSync } = await import("node:child_process");
    const good = await csr({ cn: "fallback", key: "p256" }, true);
    const bad = good.der.slice();
    bad[bad.length - 3]! ^= 0x01;
    const script = `
      const { parseCsr } = await import(${JSON.stringify(new URL("../../dist/src/pki/csr.js", import.meta.url).href)});
      const { nativeEcdsaVerify } = await import(${JSON.stringify(new URL("../../dist/src/pki/native.js", import.meta.url).href)});
      const out = { native: typeof nativeEcdsaVerify, cn: parseCsr(Buffer.from(process.argv[1], "base64")).subject.commonName };
      try { parseCsr(Buffer.from(process.argv[2], "base64")); out.bad = "accepted"; } catch (e) { out.bad = e.code; }
      console.log(JSON.stringify(out));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, Buffer.from(good.der).toString("base64"), Buffer.from(bad).toString("base64")], {
      env: { ...process.env, PLATFORM_CA_NATIVE: "0" },
    }).toString();
    expect(JSON.parse(out)).toEqual({ native: "undefined", cn: "fallback", bad: "CSR_SIGNATURE" });
  });
});

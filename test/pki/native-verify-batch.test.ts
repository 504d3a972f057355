// The batched self-signature check (native/verify-batch.c): P-256 signatures checked in runs that share one modular
// inversion must give every request node:crypto's verdict, whatever else is in its batch — hand-made edge signatures
// (r or s of 0 or n, high s, non-canonical DER), fast-check mutations, runs longer than one, and issuance of a
// mixed batch through the native call, where a bad request next to good ones must be the only one not issued.
import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify, X509Certificate } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { Issuer } from "../../src/pki/issue.js";
import { issuedNatively, issueNative, nativeResult, nativePemText } from "../../src/pki/native-issue.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { testCa } from "../fixtures/ca.js";
import { csr } from "../fixtures/csr.js";
import { DAY_FROM_T0, profile } from "./issuance-fixtures.js";
import { concat, int, seq } from "./der-builder.js";

const native = nativeCrypto!;
/** P-256's group order n. */
const N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

interface Sample {
  readonly point: Uint8Array;
  readonly message: Uint8Array;
  readonly signature: Uint8Array;
}

function sample(): Sample {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const jwk = publicKey.export({ format: "jwk" });
  const point = new Uint8Array(Buffer.concat([Buffer.of(4), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]));
  const message = new Uint8Array(randomBytes(64));
  return { point, message, signature: new Uint8Array(sign("sha256", message, privateKey)) };
}

/** node:crypto's verdict; a key it cannot import (a point off the curve) verifies nothing. */
function expected(s: Sample): boolean {
  try {
    const key = createPublicKey({ key: { kty: "EC", crv: "P-256", x: b64u(s.point.subarray(1, 33)), y: b64u(s.point.subarray(33)) }, format: "jwk" });
    return s.point.length === 65 && s.point[0] === 4 && verify("sha256", s.message, key, s.signature);
  } catch {
    return false;
  }
}

const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");
const big = (b: Uint8Array) => BigInt(`0x${Buffer.from(b).toString("hex") || "0"}`);

/** The (r, s) of a DER ECDSA-Sig-Value made by node:crypto (short-form lengths: P-256 signatures are under 128 bytes). */
function rs(sig: Uint8Array): [bigint, bigint] {
  const rLen = sig[3]!;
  const r = sig.subarray(4, 4 + rLen);
  const s = sig.subarray(6 + rLen, 6 + rLen + sig[5 + rLen]!);
  return [big(r), big(s)];
}

const ecdsaSig = (r: bigint, s: bigint) => seq(int(r), int(s));

function batch(samples: readonly Sample[]): Int8Array {
  const out = native.verifyEcdsaBatch!(samples.map((s) => s.point), 256, samples.map((s) => s.message), samples.map((s) => s.signature));
  expect(out).not.toBeNull();
  return out!;
}

let pool: Sample[] = [];
beforeAll(() => {
  pool = Array.from({ length: 48 }, sample);
});

describe("batched ECDSA P-256 verification", () => {
  it("gives node:crypto's verdict on edge signatures, each next to valid ones in one run", () => {
    const base = pool[0]!;
    const [r, s] = rs(base.signature);
    const edges: [string, Uint8Array][] = [
      ["high s (n - s), which ECDSA accepts", ecdsaSig(r, N - s)],
      ["r = 0", ecdsaSig(0n, s)],
      ["s = 0", ecdsaSig(r, 0n)],
      ["r = n", ecdsaSig(N, s)],
      ["s = n", ecdsaSig(r, N)],
      ["s + n", ecdsaSig(r, s + N)],
      ["r + n", ecdsaSig(r + N, s)],
      ["a negative s", seq(int(r), Uint8Array.of(0x02, 0x01, 0xff))],
      ["a leading zero byte too many", seq(int(r), concat(Uint8Array.of(0x02, int(s).length - 1, 0), int(s).subarray(2)))],
      ["a byte after the signature", concat(base.signature, Uint8Array.of(0))],
      ["a long-form length", concat(Uint8Array.of(0x30, 0x81, base.signature[1]!), base.signature.subarray(2))],
      ["empty", new Uint8Array(0)],
      ["the signature of another message", pool[1]!.signature],
    ];
    const samples: Sample[] = [base, ...edges.map(([, signature]) => ({ ...base, signature })), ...pool.slice(2, 10)];
    const verdicts = batch(samples);
    const names = ["the original", ...edges.map(([n]) => n), ...pool.slice(2, 10).map((_, i) => `valid ${i}`)];
    const seen = samples.map((s, i) => `${names[i]}: ${verdicts[i]}`);
    expect(seen).toEqual(samples.map((s, i) => `${names[i]}: ${expected(s) ? 1 : 0}`));
    // The high-s signature is valid, the rest of the edges are not: the comparison above ran on both kinds.
    expect([verdicts[0], verdicts[1], verdicts[2]]).toEqual([1, 1, 0]);
  });

  it("answers -1 (not judged) for a point off the curve, of the wrong length or not uncompressed, without touching the others", () => {
    const off = pool[3]!.point.slice();
    off[64]! ^= 1;
    // The hybrid form (0x06 or 0x07 with y's parity) of a valid key, which OpenSSL's decoder would take.
    const hybrid = pool[6]!.point.slice();
    hybrid[0] = 0x06 | (hybrid[64]! & 1);
    const samples = [pool[2]!, { ...pool[3]!, point: off }, { ...pool[4]!, point: pool[4]!.point.subarray(0, 64) }, { ...pool[6]!, point: hybrid }, pool[5]!];
    const verdicts = batch(samples);
    expect([...verdicts]).toEqual([1, -1, -1, -1, 1]);
    // A lone job goes OpenSSL's own way, held to the same form.
    expect([...batch([samples[3]!])]).toEqual([-1]);
    expect(samples.slice(0, 3).map((s) => native.verifyEcdsa(256, s.point, 256, s.message, s.signature))).toEqual([true, null, null]);
  });

  it("agrees with node:crypto on batches of up to 100 mutated samples, across runs of 32", () => {
    const mutate = fc.record({
      pick: fc.nat({ max: pool.length - 1 }),
      part: fc.constantFrom("none", "signature", "message", "point", "swap"),
      at: fc.nat(),
      bit: fc.integer({ min: 0, max: 7 }),
    });
    let valid = 0;
    let invalid = 0;
    fc.assert(
      fc.property(fc.array(mutate, { minLength: 1, maxLength: 100 }), (changes) => {
        const samples = changes.map(({ pick, part, at, bit }): Sample => {
          const s = pool[pick]!;
          const flip = (b: Uint8Array) => {
            const c = b.slice();
            c[at % c.length]! ^= 1 << bit;
            return c;
          };
          if (part === "signature") return { ...s, signature: flip(s.signature) };
          if (part === "message") return { ...s, message: flip(s.message) };
          if (part === "point") return { ...s, point: flip(s.point) };
          if (part === "swap") return { ...s, signature: pool[(pick + 1) % pool.length]!.signature };
          return s;
        });
        const verdicts = batch(samples);
        samples.forEach((s, i) => {
          const want = expected(s);
          want ? valid++ : invalid++;
          // -1 is "not judged": only for what node:crypto refuses too (a point it cannot import, or not 0x04-prefixed).
          expect(verdicts[i] === 1, `sample ${i}`).toBe(want);
        });
      }),
      { numRuns: 300 },
    );
    expect(valid).toBeGreaterThan(100);
    expect(invalid).toBeGreaterThan(300);
  });
});

describe("native issuance of a batch with bad signatures among good ones", () => {
  it("issues every request whose signature verifies and none of the others, in their places", async () => {
    const issuer = new Issuer((await testCa({ keyType: "p256" })).ca);
    const template = issuer.nativeTemplate(profile(), DAY_FROM_T0)!;
    const requests = await Promise.all(Array.from({ length: 70 }, (_, i) => csr({ cn: `node-${i}`, freshKey: true, ...(i % 10 === 9 && { key: "p384" as const }) })));
    const ders = requests.map((r, i) => {
      if (i % 5 !== 2) return r.der;
      const bad = r.der.slice();
      bad[bad.length - 5]! ^= 0x10; // inside the signature's s
      return bad;
    });
    const ends = Uint32Array.from(ders.map((_, i) => ders.slice(0, i + 1).reduce((n, d) => n + d.length, 0)));
    const result = issueNative([template], new Uint16Array(ders.length), concat(...ders), ends)!;
    const pem = nativePemText(result);
    ders.forEach((_, i) => {
      const issued = issuedNatively(result, i);
      expect(issued, `request ${i}`).toBe(i % 5 !== 2);
      if (issued) {
        const cert = new X509Certificate(nativeResult(result, i, pem).der);
        expect(cert.verify(issuer.ca.publicKey)).toBe(true);
        expect(cert.subject).toContain(`CN=node-${i}`);
      }
    });
  });
});

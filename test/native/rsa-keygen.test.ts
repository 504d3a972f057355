// The native RSA generator (native/rsa-keygen.c): keys OpenSSL, Python and node accept, distinct primes, a Miller-Rabin
// test that refuses pseudoprimes and agrees with a deterministic test, and node:crypto when the addon is switched off.
import { execFileSync } from "node:child_process";
import { randomBytes, sign, verify } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generateKeyPair } from "../../src/pki/keys.js";
import { nativeCrypto } from "../../src/pki/native.js";
import { generateNativeRsaKeyPair } from "../../src/pki/rsa-keygen.js";
import { run } from "../fixtures/process.js";

// The repository builds the addon (test/pki/native.test.ts says why its absence must fail here).
const isProbablePrime = nativeCrypto!.isProbablePrime!;

const bytesOf = (n: bigint): Uint8Array => new Uint8Array(Buffer.from(n.toString(16).padStart(2 * Math.ceil(n.toString(16).length / 2), "0"), "hex"));
const bigOf = (b64url: string): bigint => BigInt(`0x${Buffer.from(b64url, "base64url").toString("hex")}`);

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  base %= modulus;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * base) % modulus;
    base = (base * base) % modulus;
  }
  return result;
}

/** Whether odd n > 2 is a strong probable prime to base a. */
function strongProbablePrime(n: bigint, a: bigint): boolean {
  let d = n - 1n;
  let s = 0;
  while ((d & 1n) === 0n) [d, s] = [d >> 1n, s + 1];
  let x = modPow(a, d, n);
  if (x === 1n || x === n - 1n) return true;
  for (let i = 1; i < s; i++) if ((x = (x * x) % n) === n - 1n) return true;
  return false;
}

// Strong probable primes to the first 12 primes are primes below 3.3·10^24 (Sorenson and Webster): exact for n < 2^53.
const BASES = [2n, 3n, 5n, 7n, 11n, 13n, 17n, 19n, 23n, 29n, 31n, 37n];
function deterministicPrime(n: bigint): boolean {
  if (n < 2n) return false;
  if (BASES.includes(n)) return true;
  if (BASES.some((p) => n % p === 0n)) return false;
  return BASES.every((a) => strongProbablePrime(n, a));
}

const smallFactors = (n: bigint): bigint[] => {
  const out: bigint[] = [];
  for (let p = 2n; p * p <= n; p++) while (n % p === 0n) [n, out[out.length]] = [n / p, p];
  return n > 1n ? [...out, n] : out;
};

const opensslPrime = (bits: number): bigint => BigInt(run("openssl", ["prime", "-generate", "-bits", String(bits)]).trim());

describe("native RSA key generation", () => {
  it.each([2048, 3072, 4096])("makes RSA-%i keys that openssl pkey -check, Python cryptography and node accept", async (bits) => {
    const pair = (await generateNativeRsaKeyPair(bits))!;
    expect(pair).toBeDefined();
    expect(pair.privateKey.asymmetricKeyDetails).toEqual({ modulusLength: bits, publicExponent: 65537n });
    const pem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    // OpenSSL 3 tests p and q for primality with its own rounds and checks d, dp, dq and qi.
    expect(run("openssl", ["pkey", "-check", "-noout"], pem)).toContain("Key is valid");
    const python = [
      "import sys; from cryptography.hazmat.primitives.serialization import load_pem_private_key",
      "k = load_pem_private_key(sys.stdin.buffer.read(), None); v = k.private_numbers()",
      "print(k.key_size, v.public_numbers.e, v.p * v.q == v.public_numbers.n, v.p != v.q)",
    ].join("\n");
    expect(run("/usr/bin/python3", ["-c", python], pem).trim()).toBe(`${bits} 65537 True True`);
    const message = randomBytes(100);
    const signature = sign("sha256", message, pair.privateKey);
    expect(verify("sha256", message, pair.publicKey, signature)).toBe(true);
    expect(verify("sha256", Buffer.concat([message, Buffer.of(0)]), pair.publicKey, signature)).toBe(false);
    // FIPS 186-5: the primes are far apart and d is above 2^(nlen/2).
    const jwk = pair.privateKey.export({ format: "jwk" });
    const [p, q, d] = [bigOf(jwk.p!), bigOf(jwk.q!), bigOf(jwk.d!)];
    expect((p > q ? p - q : q - p) > 1n << BigInt(bits / 2 - 100)).toBe(true);
    expect(d > 1n << BigInt(bits / 2)).toBe(true);
    expect([p.toString(2).length, q.toString(2).length]).toEqual([bits / 2, bits / 2]);
  }, 60_000);

  it("makes 50 distinct RSA-2048 keys with 100 distinct primes, through generateKeyPair", async () => {
    const keys = await Promise.all(Array.from({ length: 50 }, () => generateKeyPair("rsa2048")));
    const jwks = keys.map((k) => k.privateKey.export({ format: "jwk" }));
    expect(new Set(jwks.map((j) => j.n)).size).toBe(50);
    expect(new Set(jwks.flatMap((j) => [j.p, j.q])).size).toBe(100);
    expect(keys.every((k) => k.privateKeyPem.startsWith("-----BEGIN PRIVATE KEY-----"))).toBe(true);
  }, 60_000);

  it("returns null for sizes it does not generate", () => {
    for (const bits of [1024, 2047, 2052, 8200, Number.NaN]) expect(nativeCrypto!.generateRsaKey!(bits)).toBeNull();
  });
});

describe("native Miller-Rabin test", () => {
  it("refuses Carmichael numbers", () => {
    const carmichael = [561n, 1105n, 1729n, 2465n, 2821n, 6601n, 8911n, 41041n, 825265n, 321197185n, 5394826801n];
    for (const n of carmichael) {
      // Korselt's criterion: square-free, composite, and p − 1 divides n − 1 for every prime factor.
      const factors = smallFactors(n);
      expect(factors.length > 1 && new Set(factors).size === factors.length && factors.every((p) => (n - 1n) % (p - 1n) === 0n)).toBe(true);
      expect(isProbablePrime(bytesOf(n), 20)).toBe(false);
    }
  });

  it("refuses strong pseudoprimes to base 2, which its base-2 round alone lets through", () => {
    const pseudoprimes = [2047n, 3277n, 4033n, 4681n, 8321n, 3215031751n];
    for (const n of pseudoprimes) {
      expect(smallFactors(n).length > 1 && strongProbablePrime(n, 2n)).toBe(true);
      expect(isProbablePrime(bytesOf(n), 0)).toBe(true);
      expect(isProbablePrime(bytesOf(n), 20)).toBe(false);
    }
    // 3215031751 is a strong pseudoprime to bases 2, 3, 5 and 7 at once.
    expect([3n, 5n, 7n].every((a) => strongProbablePrime(3215031751n, a))).toBe(true);
  });

  it("accepts known primes and refuses the product of two large ones", () => {
    const [p, q] = [opensslPrime(1024), opensslPrime(1024)];
    for (const prime of [(1n << 127n) - 1n, (1n << 521n) - 1n, p, q, opensslPrime(1536)]) expect(isProbablePrime(bytesOf(prime), 5)).toBe(true);
    for (const composite of [p * q, (1n << 128n) - 1n, p * p, (1n << 521n) + 1n]) expect(isProbablePrime(bytesOf(composite), 5)).toBe(false);
  });

  it("agrees with trial division below 1000 (0, 1, 2, 3 and even numbers included)", () => {
    const expected = Array.from({ length: 1000 }, (_, n) => n > 1 && smallFactors(BigInt(n)).length === 1);
    expect(Array.from({ length: 1000 }, (_, n) => isProbablePrime(bytesOf(BigInt(n)), 20))).toEqual(expected);
  });

  it("agrees with a deterministic test on random odd numbers below 2^53", () => {
    let primes = 0;
    fc.assert(
      fc.property(fc.bigInt({ min: 2n, max: (1n << 52n) - 1n }), (half) => {
        const n = 2n * half + 1n;
        const expected = deterministicPrime(n);
        primes += expected ? 1 : 0;
        return isProbablePrime(bytesOf(n), 20) === expected;
      }),
      { numRuns: 2000 },
    );
    // About one odd number in 18 of this size is prime: both answers were exercised.
    expect(primes).toBeGreaterThan(30);
  });

  it("refuses arguments not of its shape", () => {
    expect(isProbablePrime(new Uint8Array([7]), -1)).toBeNull();
    expect((isProbablePrime as (...args: unknown[]) => unknown)([7], 5)).toBeNull();
  });
});

describe("RSA key generation with the addon switched off", () => {
  it("uses node:crypto with PLATFORM_CA_NATIVE=0", () => {
    const dist = (m: string) => JSON.stringify(new URL(`../../dist/src/pki/${m}`, import.meta.url).href);
    const script = `
      const { generateKeyPair } = await import(${dist("keys.js")});
      const { generateNativeRsaKeyPair } = await import(${dist("rsa-keygen.js")});
      const { nativeCrypto } = await import(${dist("native.js")});
      const pair = await generateKeyPair("rsa2048");
      const native = await generateNativeRsaKeyPair(2048);
      const bits = pair.privateKey.asymmetricKeyDetails.modulusLength;
      console.log(JSON.stringify({ addon: nativeCrypto !== undefined, native: native !== undefined, bits, pem: pair.privateKeyPem }));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { env: { ...process.env, PLATFORM_CA_NATIVE: "0" }, stdio: "pipe" });
    const { pem, ...rest } = JSON.parse(out.toString()) as { pem: string };
    expect(rest).toEqual({ addon: false, native: false, bits: 2048 });
    expect(run("openssl", ["pkey", "-check", "-noout"], pem)).toContain("Key is valid");
  });
});

// native/rsa-keygen.c alone, under AddressSanitizer and UBSan and under valgrind's leak check: the components it prints
// satisfy the RSA relations, checked here with BigInt, and its primality test reads exactly the bytes it is given.
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "../fixtures/temp-dir.js";

const root = resolve(import.meta.dirname, "../..");
const dir = tempDir("rsa-keygen-driver-");
const sanitized = join(dir, "sanitized");
const plain = join(dir, "plain");

beforeAll(() => {
  // Built against the system's OpenSSL 3 (libcrypto): the generator uses only its public BIGNUM API.
  const sources = [join(root, "test/native/rsa-keygen-driver.c"), join(root, "native/rsa-keygen.c"), "-lcrypto", "-lpthread"];
  execFileSync("gcc", ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1", "-o", sanitized, ...sources], { stdio: "pipe" });
  execFileSync("gcc", ["-g", "-O1", "-o", plain, ...sources], { stdio: "pipe" });
}, 60_000);

// LeakSanitizer needs ptrace, which some containers forbid: leaks are valgrind's part.
const asan = (args: string[], input?: string) =>
  execFileSync(sanitized, args, { input, env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" }, maxBuffer: 1 << 24 }).toString();
const valgrind = (args: string[], input?: string) =>
  execFileSync("valgrind", ["-q", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=9", plain, ...args], { input }).toString();

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));

function checkKeys(output: string, bits: number, count: number): void {
  const lines = output.trim().split("\n");
  expect(lines).toHaveLength(count);
  for (const line of lines) {
    const [n, e, d, p, q, dp, dq, qi] = line.split(" ").map((h) => BigInt(`0x${h}`)) as [bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint];
    const lcm = ((p - 1n) * (q - 1n)) / gcd(p - 1n, q - 1n);
    expect({ nBits: n.toString(2).length, pBits: p.toString(2).length, qBits: q.toString(2).length, e }).toEqual({ nBits: bits, pBits: bits / 2, qBits: bits / 2, e: 65537n });
    expect(n === p * q && p > q && p - q > 1n << BigInt(bits / 2 - 100)).toBe(true);
    expect((e * d) % lcm === 1n && d < lcm && d > 1n << BigInt(bits / 2)).toBe(true);
    expect(dp === d % (p - 1n) && dq === d % (q - 1n) && (qi * q) % p === 1n && qi < p).toBe(true);
  }
}

// Composites (Carmichael numbers, strong pseudoprimes to base 2, 0, 1, even numbers), primes, odd digit counts.
// 561, 2047, 3277, 41041, 3215031751, 825265, 253, 65537, 2^31 − 1, 2^508 + 1 (divisible by 17).
const NUMBERS = ["0", "1", "2", "3", "4", "231", "7ff", "ccd", "a051", "bfa17dc7", "c97b1", "fd", "10001", "7fffffff", "1" + "0".repeat(126) + "1"];
const VERDICTS = "001100000000110";

describe("the C RSA generator under the sanitizers", () => {
  it("prints RSA-2048 and RSA-3072 keys whose components hold the RSA relations, with AddressSanitizer and UBSan", () => {
    checkKeys(asan(["keys", "2048", "4"]), 2048, 4);
    checkKeys(asan(["keys", "3072", "1"]), 3072, 1);
    expect(() => asan(["keys", "1024", "1"])).toThrow(); // a size outside 2048–8192 is refused, not generated
  }, 60_000);

  it("reads numbers of exactly their size in its primality test, with AddressSanitizer and UBSan", () => {
    expect(asan(["primes", "20"], NUMBERS.join("\n") + "\n")).toBe(VERDICTS);
    expect(asan(["primes", "1001"], "7\n")).toBe("-");
  });

  it("leaks nothing under valgrind", () => {
    checkKeys(valgrind(["keys", "2048", "2"]), 2048, 2);
    // As many random bases as the sanitized run: with 5, the Carmichael number 3215031751 among NUMBERS may pass
    // (each random base a liar with probability up to 1/4, Rabin: up to 1 run in 1,024), as it did once in a full run.
    expect(valgrind(["primes", "20"], NUMBERS.join("\n") + "\n")).toBe(VERDICTS);
  }, 60_000);
});

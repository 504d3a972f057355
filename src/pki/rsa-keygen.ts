// RSA key pairs from the native generator (native/rsa-keygen.c), checked once before use; undefined when it is absent.
import { Buffer } from "node:buffer";
import { createPrivateKey, createPublicKey, sign as signCallback, verify as verifyCallback, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import { PlatformError } from "../errors.js";
import { nativeCrypto, type RsaKeyComponents } from "./native.js";

const sign = promisify(signCallback);
const verify = promisify(verifyCallback);
const CHECK_MESSAGE = Buffer.from("platform-ca RSA key check");

const magnitude = (bytes: Buffer): bigint => BigInt(`0x${bytes.toString("hex") || "0"}`);

/**
 * An RSA key of `bits` from the native generator, or undefined when the addon is not built, is disabled
 * (PLATFORM_CA_NATIVE=0) or predates the generator: the caller then uses node:crypto.
 */
export async function generateNativeRsaKeyPair(bits: number): Promise<{ privateKey: KeyObject; publicKey: KeyObject } | undefined> {
  const pending = nativeCrypto?.generateRsaKey?.(bits);
  if (pending === undefined || pending === null) return undefined;
  const parts = await pending.catch((err: unknown) => {
    throw new PlatformError("INTERNAL", `RSA-${bits} key generation failed: ${(err as Error).message}`, { cause: err });
  });
  try {
    const privateKey = createPrivateKey({ key: { kty: "RSA", ...base64urlParts(parts) }, format: "jwk" });
    const publicKey = createPublicKey(privateKey);
    await checkKey(parts, privateKey, publicKey, bits);
    return { privateKey, publicKey };
  } finally {
    // The JWK strings are out of reach once the KeyObject holds the key; the raw components are not left behind.
    for (const part of Object.values(parts) as Buffer[]) part.fill(0);
  }
}

function base64urlParts(parts: RsaKeyComponents): Record<keyof RsaKeyComponents, string> {
  const { n, e, d, p, q, dp, dq, qi } = parts;
  const b = (x: Buffer) => x.toString("base64url");
  return { n: b(n), e: b(e), d: b(d), p: b(p), q: b(q), dp: b(dp), dq: b(dq), qi: b(qi) };
}

/** n = p·q at the requested size, and a signature made with the CRT values verifies with (n, e): once per key. */
async function checkKey(parts: RsaKeyComponents, privateKey: KeyObject, publicKey: KeyObject, bits: number): Promise<void> {
  const n = magnitude(parts.n);
  let good = n === magnitude(parts.p) * magnitude(parts.q) && n.toString(2).length === bits;
  if (good) good = await verify("sha256", CHECK_MESSAGE, publicKey, await sign("sha256", CHECK_MESSAGE, privateKey));
  if (!good) throw new PlatformError("INTERNAL", `generated RSA-${bits} key failed its consistency check`);
}

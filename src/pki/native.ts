// Loads the optional native accelerator (native/crypto.c); absent or disabled, callers use node:crypto.
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../compiled-script.js";

/** SHA-2 size the native functions hash with. */
export type NativeHashBits = 256 | 384 | 512;

/** An opaque CA private key held by OpenSSL (EC_KEY or RSA) for the life of an Issuer. */
export type NativeSigningKey = { readonly __nativeSigningKey: unique symbol };

export interface NativeCrypto {
  /** ECDSA check of `message` (hashed in C): true / false, or null when the key or input is not handled natively. */
  verifyEcdsa(curveBits: number, point: Uint8Array, hashBits: NativeHashBits, message: Uint8Array, signature: Uint8Array): boolean | null;
  /** RSA PKCS#1 v1.5 check from the modulus and exponent (big-endian magnitudes); null when not handled natively. */
  verifyRsa(modulus: Uint8Array, exponent: Uint8Array, hashBits: NativeHashBits, message: Uint8Array, signature: Uint8Array): boolean | null;
  /** Imports a PKCS#8 DER private key; null for key types signed through node:crypto (Ed25519). */
  signingKey(pkcs8: Uint8Array): NativeSigningKey | null;
  /** ECDSA (DER signature) or RSA PKCS#1 v1.5 over `message`, hashed in C; null on failure. */
  sign(key: NativeSigningKey, hashBits: NativeHashBits, message: Uint8Array): Buffer | null;
  /**
   * Reads, checks and issues a batch of DER CSRs (native/issue.c): job i, with the template `templates[templateIndex[i]]`
   * (0xffff: none) and the key beside it, is csrBytes up to csrEnds[i] and gets serials[16i..16i+16). The result is the
   * DER certificates back to back, then their PEM texts; derEnds[i] / pemEnds[i] are where job i's end (PEM counted
   * from the first PEM), an empty job was not issued. Null when the arguments are not of this shape. Absent from a
   * build older than the function: callers issue in JavaScript then.
   */
  issueBatch?(
    keys: readonly NativeSigningKey[],
    templates: readonly Uint8Array[],
    templateIndex: Uint16Array,
    csrBytes: Uint8Array,
    csrEnds: Uint32Array,
    serials: Uint8Array,
    derEnds: Uint32Array,
    pemEnds: Uint32Array,
  ): ArrayBuffer | null;
  /**
   * P-256 checks of message i (hashed in C) against uncompressed point i, made together (native/verify-batch.c):
   * 1 / 0 / -1 each (-1: not judged here, e.g. a point that is not uncompressed or not on the curve). Null when the
   * arguments are not of this shape. Absent from a build older than the function.
   */
  verifyEcdsaBatch?(points: readonly Uint8Array[], hashBits: NativeHashBits, messages: readonly Uint8Array[], signatures: readonly Uint8Array[]): Int8Array | null;
  /**
   * The self-signature checks of DER requests back to back (request i ends at ends[i]) on the libuv pool
   * (native/verify-async.c): 1 when request i reads and verifies, 0 when not (the caller judges it then); the number 0
   * when the job could not run. Null when the arguments are not of this shape. Absent from a build older than the function.
   */
  verifyRequests?(bytes: Uint8Array, ends: Uint32Array): Promise<Int8Array | number> | null;
  /**
   * Generates an RSA key (e = 65537) of `bits` (2048–8192, a multiple of 8) on the libuv pool (native/rsa-keygen.c):
   * its components as big-endian magnitudes, or null for another size. Absent from a build older than the function.
   */
  generateRsaKey?(bits: number): Promise<RsaKeyComponents> | null;
  /** The generator's Miller-Rabin test (base 2, then `rounds` random bases) on a big-endian number; for tests. */
  isProbablePrime?(value: Uint8Array, rounds: number): boolean | null;
}

/** The JWK members of an RSA private key, as big-endian magnitudes. */
export interface RsaKeyComponents {
  readonly n: Buffer;
  readonly e: Buffer;
  readonly d: Buffer;
  readonly p: Buffer;
  readonly q: Buffer;
  readonly dp: Buffer;
  readonly dq: Buffer;
  readonly qi: Buffer;
}

const FUNCTIONS = ["verifyEcdsa", "verifyRsa", "signingKey", "sign"] as const;

function load(): NativeCrypto | undefined {
  // PLATFORM_CA_NATIVE=0 forces the node:crypto path (tests run both).
  if (process.env.PLATFORM_CA_NATIVE === "0") return undefined;
  // Found from the package root, not from this module: the same from src/, dist/ and the bundled `sign`, and in an
  // image that ships build/Release without binding.gyp.
  if (PACKAGE_ROOT === undefined) return undefined;
  const file = join(PACKAGE_ROOT, "build", "Release", "platform_ca_native.node");
  if (!existsSync(file)) return undefined;
  try {
    const mod = createRequire(import.meta.url)(file) as Record<string, unknown>;
    return FUNCTIONS.every((name) => typeof mod[name] === "function") ? (mod as unknown as NativeCrypto) : undefined;
  } catch {
    return undefined;
  }
}

/** The native accelerator when built and enabled, else undefined. */
export const nativeCrypto: NativeCrypto | undefined = load();

/** "sha256" → 256 …; undefined for anything the native functions do not hash. */
export function nativeHashBits(hash: string | null): NativeHashBits | undefined {
  return hash === "sha256" ? 256 : hash === "sha384" ? 384 : hash === "sha512" ? 512 : undefined;
}

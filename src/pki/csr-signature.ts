// The self-signature check of a request (the native verifier, else node:crypto), and the memory of requests already
// verified in this process so that a request parsed again on its way is not verified again.
import { Buffer } from "node:buffer";
import { constants, createPublicKey, verify, type KeyObject } from "node:crypto";
import { PlatformError } from "../errors.js";
import type { KeyMaterial } from "./csr-public-key.js";
import { nativeCrypto, nativeHashBits } from "./native.js";
import { SharedVerifiedMemo } from "./verified-memo.js";

export type Hash = "sha256" | "sha384" | "sha512";

export interface SignatureCheck {
  readonly hash: Hash | null;
  /** RSASSA-PSS salt length; undefined for PKCS#1 v1.5, ECDSA and Ed25519. */
  readonly pssSaltLength?: number;
}

function importKey(key: KeyMaterial): KeyObject {
  try {
    if (key.jwk !== undefined) return createPublicKey({ key: key.jwk, format: "jwk" });
    const spki = key.info.spki;
    return createPublicKey({ key: Buffer.from(spki.buffer, spki.byteOffset, spki.byteLength), format: "der", type: "spki" });
  } catch (err) {
    throw new PlatformError("KEY_INVALID", `public key cannot be imported: ${(err as Error).message}`, { cause: err });
  }
}

// Verification is a pure function of the DER, and one request is parsed several times on its way
// (admission, approval, signing): remember the last requests that verified, keyed by their bytes.
const VERIFIED = new Map<string, true>();
const VERIFIED_LIMIT = 1024;
let shared: SharedVerifiedMemo | undefined;

/**
 * Shares verifications with the other threads of this process through `memo` (each thread calls this with a view of
 * the same buffer): a request one thread verified is not verified again by another. Only verdicts of this process's
 * own verifier go in, so nothing another process or server says is trusted (docs/security.md).
 */
export function shareVerifiedMemo(memo: SharedVerifiedMemo | undefined): void {
  shared = memo;
}

/** The memory this thread shares with the process's other threads (shareVerifiedMemo), if any. */
export function sharedVerifiedMemo(): SharedVerifiedMemo | undefined {
  return shared;
}

export function verifySignatureOnce(der: Uint8Array, key: KeyMaterial, check: SignatureCheck, tbs: Uint8Array, signature: Uint8Array): void {
  const memo = unverifiedKey(der);
  if (memo === undefined) return;
  verifySignature(key, check, tbs, signature);
  rememberVerified(memo);
}

/** Where a request's bytes go in the memories of verified requests (this thread's, and the process's when shared). */
export interface VerifiedKey {
  readonly id: string;
  readonly digest: Uint8Array | undefined;
}

/**
 * The memory key of a request that was not verified before in this process, or undefined when it was (parseCsr would
 * not check its signature again).
 */
export function unverifiedKey(der: Uint8Array): VerifiedKey | undefined {
  // latin1 maps each byte to one character: the cheapest exact string key for the bytes.
  const id = Buffer.from(der.buffer, der.byteOffset, der.byteLength).toString("latin1");
  if (VERIFIED.has(id)) return undefined;
  const digest = shared && SharedVerifiedMemo.digest(der);
  if (digest && shared!.has(digest)) {
    rememberHere(id);
    return undefined;
  }
  return { id, digest };
}

/** Records that this process's own verifier (parseCsr, or the native batched issuance) accepted the request. */
export function rememberVerified(key: VerifiedKey): void {
  if (key.digest) shared?.add(key.digest);
  rememberHere(key.id);
}

function rememberHere(id: string): void {
  if (VERIFIED.size >= VERIFIED_LIMIT) VERIFIED.delete(VERIFIED.keys().next().value!);
  VERIFIED.set(id, true);
}

export function verifySignature(key: KeyMaterial, check: SignatureCheck, tbs: Uint8Array, signature: Uint8Array): void {
  const bits = nativeHashBits(check.hash);
  if (nativeCrypto !== undefined && bits !== undefined && check.pssSaltLength === undefined) {
    const verdict =
      key.ecPoint !== undefined
        ? nativeCrypto.verifyEcdsa(key.info.bits, key.ecPoint, bits, tbs, signature)
        : key.rsa !== undefined
          ? nativeCrypto.verifyRsa(key.rsa.n, key.rsa.e, bits, tbs, signature)
          : null;
    if (verdict === true) return;
    if (verdict === false) throw new PlatformError("CSR_SIGNATURE", "CSR signature does not verify with the request's own public key");
    // null: the native verifier cannot judge this key; node:crypto decides below.
  }
  const keyObject = importKey(key);
  let ok = false;
  try {
    const verifyKey =
      check.pssSaltLength === undefined
        ? keyObject
        : { key: keyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: check.pssSaltLength };
    ok = verify(check.hash, tbs, verifyKey, signature);
  } catch {
    // OpenSSL reports some malformed signatures (bad ECDSA DER) as errors rather than a mismatch.
    ok = false;
  }
  if (!ok) throw new PlatformError("CSR_SIGNATURE", "CSR signature does not verify with the request's own public key");
}

// Pieces of a TBSCertificate pre-encoded for reuse (algorithms, extensions), serial numbers, and the final signature.
import { Buffer } from "node:buffer";
import { randomBytes, sign, type KeyObject } from "node:crypto";
import { PlatformError } from "../errors.js";
import {
  assembleCertificate,
  boolean,
  DER_NULL,
  explicit,
  ia5String,
  implicitPrimitive,
  integer,
  namedBitString,
  objectIdentifier,
  octetString,
  sequence,
  time,
} from "./der-writer.js";
import { nativeCrypto, nativeHashBits, type NativeHashBits, type NativeSigningKey } from "./native.js";
import { OID } from "./oids.js";
import type { KeyAlgorithm, NamedCurve, Validity } from "./types.js";

export type SignatureHash = "sha256" | "sha384" | "sha512" | null;

/** How a CA key signs: the AlgorithmIdentifier written into certificates and the hash given to crypto.sign. */
export interface SignatureScheme {
  readonly algorithmDer: Uint8Array;
  readonly hash: SignatureHash;
}

const ECDSA_SCHEMES: Readonly<Record<NamedCurve, { oid: string; hash: SignatureHash }>> = {
  "P-256": { oid: OID.ecdsaWithSha256, hash: "sha256" },
  "P-384": { oid: OID.ecdsaWithSha384, hash: "sha384" },
  "P-521": { oid: OID.ecdsaWithSha512, hash: "sha512" },
};

/** ecdsa-with-SHA256/384/512 by curve (no parameters), sha256WithRSAEncryption (NULL parameters), or Ed25519. */
export function signatureScheme(algorithm: KeyAlgorithm, curve?: NamedCurve): SignatureScheme {
  switch (algorithm) {
    case "rsa":
      return { algorithmDer: sequence(objectIdentifier(OID.sha256WithRsa), DER_NULL), hash: "sha256" };
    case "ed25519":
      return { algorithmDer: sequence(objectIdentifier(OID.ed25519)), hash: null };
    case "ecdsa": {
      const scheme = curve === undefined ? undefined : ECDSA_SCHEMES[curve];
      if (scheme === undefined) throw new PlatformError("KEY_UNSUPPORTED", `ECDSA CA key on curve ${curve ?? "(none)"} is not supported`);
      return { algorithmDer: sequence(objectIdentifier(scheme.oid)), hash: scheme.hash };
    }
    default:
      throw new PlatformError("KEY_UNSUPPORTED", `CA key algorithm ${String(algorithm)} is not supported`);
  }
}

/** [0] EXPLICIT INTEGER 2: every issued certificate is v3. */
export const VERSION_V3: Uint8Array = explicit(0, integer(2));

const OID_DER = new Map<string, Uint8Array>();
const CRITICAL = boolean(true);

function oidDer(oid: string): Uint8Array {
  let der = OID_DER.get(oid);
  if (der === undefined) {
    der = objectIdentifier(oid);
    if (OID_DER.size < 1024) OID_DER.set(oid, der);
  }
  return der;
}

/** Extension ::= SEQUENCE { extnID, critical DEFAULT FALSE, extnValue OCTET STRING }; `value` is the inner DER. */
export function extension(oid: string, critical: boolean, value: Uint8Array): Uint8Array {
  return critical ? sequence(oidDer(oid), CRITICAL, octetString(value)) : sequence(oidDer(oid), octetString(value));
}

/** BasicConstraints, always critical; CA=FALSE is the DER default and so an empty SEQUENCE. */
export function basicConstraintsExtension(isCa: boolean, pathLen?: number): Uint8Array {
  if (pathLen !== undefined && (!Number.isSafeInteger(pathLen) || pathLen < 0)) {
    throw new PlatformError("INVALID_ARGUMENT", `pathLen must be a non-negative integer, got ${pathLen}`);
  }
  const value = isCa ? sequence(boolean(true), ...(pathLen === undefined ? [] : [integer(pathLen)])) : sequence();
  return extension(OID.basicConstraints, true, value);
}

/** KeyUsage (critical) from a UsageSet.keyUsage mask; undefined when no bit is set. */
export function keyUsageExtension(mask: number): Uint8Array | undefined {
  return mask === 0 ? undefined : extension(OID.keyUsage, true, namedBitString(mask));
}

/** ExtendedKeyUsage (not critical); undefined for an empty list. */
export function extKeyUsageExtension(oids: readonly string[]): Uint8Array | undefined {
  return oids.length === 0 ? undefined : extension(OID.extKeyUsage, false, sequence(...oids.map(oidDer)));
}

export function subjectKeyIdentifierExtension(keyId: Uint8Array): Uint8Array {
  return extension(OID.subjectKeyIdentifier, false, octetString(keyId));
}

/** AuthorityKeyIdentifier with keyIdentifier [0] only. */
export function authorityKeyIdentifierExtension(keyId: Uint8Array): Uint8Array {
  return extension(OID.authorityKeyIdentifier, false, sequence(implicitPrimitive(0, keyId)));
}

/**
 * CRLDistributionPoints with one DistributionPoint whose fullName is one uniformResourceIdentifier (RFC 5280
 * §4.2.1.13): distributionPoint [0] and fullName [0] are constructed, the URI is [6] IMPLICIT IA5String.
 */
export function crlDistributionPointsExtension(uri: string): Uint8Array {
  // IMPLICIT tagging keeps the IA5String's length and content and replaces its tag: [6] primitive.
  const uriName = ia5String(uri);
  uriName[0] = 0x86;
  return extension(OID.cRLDistributionPoints, false, sequence(sequence(explicit(0, explicit(0, uriName)))));
}

export function validityDer(validity: Validity): Uint8Array {
  if (!(validity.notBefore.getTime() < validity.notAfter.getTime())) {
    throw new PlatformError(
      "LIFETIME_INVALID",
      `notAfter ${validity.notAfter.toISOString()} is not after notBefore ${validity.notBefore.toISOString()}`,
    );
  }
  return sequence(time(validity.notBefore), time(validity.notAfter));
}

// Randomness is drawn in blocks: one randomBytes call per certificate costs more than encoding the certificate.
const SERIAL_BYTES = 16;
const SERIAL_POOL = SERIAL_BYTES * 256;
let serialPool: Buffer = Buffer.alloc(0);
let serialAt = 0;

/**
 * 16 random bytes with the top bit cleared (a positive INTEGER) and a non-zero first byte, so the DER encoding is
 * always these 16 bytes: no sign octet and no leading zero to strip.
 */
export function randomSerial(): Uint8Array {
  for (;;) {
    if (serialAt + SERIAL_BYTES > serialPool.length) {
      // A fresh buffer each time: serials handed out earlier are views of the previous one.
      serialPool = randomBytes(SERIAL_POOL);
      serialAt = 0;
    }
    const serial = serialPool.subarray(serialAt, serialAt + SERIAL_BYTES);
    serialAt += SERIAL_BYTES;
    serial[0]! &= 0x7f;
    if (serial[0] !== 0) return serial;
  }
}

/** `count` serials of randomSerial's form back to back, in one fresh buffer (a batch issued in one native call). */
export function randomSerials(count: number): Uint8Array {
  // From the same blocks as randomSerial: a randomBytes call of its own costs microseconds, too much for a lone request.
  const out = new Uint8Array(count * SERIAL_BYTES);
  for (let at = 0; at < out.length; at += SERIAL_BYTES) out.set(randomSerial(), at);
  return out;
}

/** Signs a TBSCertificate with one CA key: made once per Issuer, it keeps the key in the form that signs fastest. */
export type CaSignFunction = (tbs: Uint8Array) => Uint8Array;

/** A CA key held by OpenSSL through the native accelerator, with the hash its scheme signs with. */
export interface NativeCaKey {
  readonly handle: NativeSigningKey;
  readonly hashBits: NativeHashBits;
}

/** The CA key held natively, when the accelerator is built and handles the scheme (ECDSA, RSA); else null. */
export function nativeCaKey(scheme: SignatureScheme, key: KeyObject): NativeCaKey | null {
  const hashBits = nativeHashBits(scheme.hash);
  if (nativeCrypto === undefined || hashBits === undefined) return null;
  const handle = nativeCrypto.signingKey(key.export({ type: "pkcs8", format: "der" }));
  return handle === null ? null : { handle, hashBits };
}

/**
 * The CA key as a sign function: held by OpenSSL through the native accelerator when it is built and handles the
 * key type (ECDSA, RSA), else node:crypto's sign with the imported KeyObject (Ed25519, or no accelerator).
 */
export function caSignFunction(scheme: SignatureScheme, key: KeyObject, native: NativeCaKey | null = nativeCaKey(scheme, key)): CaSignFunction {
  const failed = (cause: unknown) =>
    new PlatformError("CA_INVALID", `signing with the CA key failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  if (native !== null) {
    const accelerator = nativeCrypto!;
    const { handle, hashBits } = native;
    return (tbs) => {
      const signature = accelerator.sign(handle, hashBits, tbs);
      if (signature === null) throw failed("OpenSSL refused to sign");
      return signature;
    };
  }
  return (tbs) => {
    try {
      return sign(scheme.hash, tbs, key);
    } catch (err) {
      throw failed(err);
    }
  };
}

/** Signs the TBSCertificate made of `tbsParts` and returns the DER Certificate. */
export function signCertificate(tbsParts: readonly Uint8Array[], scheme: SignatureScheme, signer: CaSignFunction | KeyObject): Uint8Array {
  const tbs = sequence(...tbsParts);
  const signature = typeof signer === "function" ? signer(tbs) : caSignFunction(scheme, signer)(tbs);
  return assembleCertificate(tbs, scheme.algorithmDer, signature);
}


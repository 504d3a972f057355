// A request's subjectPublicKeyInfo read into the key material its signature check needs: RSA, EC and Ed25519, as JWK.
//
// Importing the public key dominates the cost of a CSR: node imports a JWK roughly twice (EC) to four
// times (RSA) faster than SPKI DER, so the JWK is built from the SPKI fields read here.
import { Buffer } from "node:buffer";
import type { JsonWebKey } from "node:crypto";
import { PlatformError } from "../errors.js";
import { DerReader, Tag, type Tlv } from "./der.js";
import { describeOid, OID } from "./oids.js";
import type { NamedCurve, PublicKeyInfo } from "./types.js";

export const RSA_MIN_BITS = 2048;
export const RSA_MAX_BITS = 8192;

const CURVES: Readonly<Record<string, { readonly curve: NamedCurve; readonly bits: number; readonly size: number }>> = {
  [OID.p256]: { curve: "P-256", bits: 256, size: 32 },
  [OID.p384]: { curve: "P-384", bits: 384, size: 48 },
  [OID.p521]: { curve: "P-521", bits: 521, size: 66 },
};

export interface KeyMaterial {
  readonly info: PublicKeyInfo;
  /** JWK to import, or undefined when only the SPKI DER form can express the key (compressed EC points). */
  readonly jwk: JsonWebKey | undefined;
  /** Uncompressed EC point, for the native verifier. */
  readonly ecPoint?: Uint8Array;
  /** RSA modulus and exponent, for the native verifier. */
  readonly rsa?: { readonly n: Uint8Array; readonly e: Uint8Array };
}

// AlgorithmIdentifier, read here for the key and by the request parse for its signature algorithm.
export interface Algorithm {
  readonly oid: string;
  readonly params: Tlv | undefined;
  readonly reader: DerReader;
}

export function readAlgorithm(reader: DerReader, what: string): Algorithm {
  const alg = reader.sequence(what);
  const oid = alg.oid(`${what} algorithm`);
  const params = alg.hasMore() ? alg.next(undefined, `${what} parameters`) : undefined;
  alg.finish(what);
  return { oid, params, reader: alg };
}

export function paramsAbsentOrNull(alg: Algorithm): boolean {
  return alg.params === undefined || (alg.params.tag === Tag.NULL && alg.params.end === alg.params.contentStart);
}

function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
}

function bitLength(magnitude: Uint8Array): number {
  if (magnitude.length === 0 || (magnitude.length === 1 && magnitude[0] === 0)) return 0;
  return (magnitude.length - 1) * 8 + (32 - Math.clz32(magnitude[0]!));
}

const keyError = (code: "KEY_UNSUPPORTED" | "KEY_INVALID" | "KEY_TOO_WEAK", message: string): PlatformError =>
  new PlatformError(code, message);

const ACCEPTED_KEYS = "accepted keys are RSA 2048-8192 bits, ECDSA P-256/P-384/P-521 and Ed25519";

export function readPublicKey(reader: DerReader): KeyMaterial {
  const spkiTlv = reader.next(Tag.SEQUENCE, "subjectPublicKeyInfo");
  const spkiDer = reader.bytes(spkiTlv);
  const spki = reader.child(spkiTlv);
  const alg = readAlgorithm(spki, "subjectPublicKeyInfo algorithm");
  const key = spki.bitString("subjectPublicKey");
  spki.finish("subjectPublicKeyInfo");
  if (key.unusedBits !== 0) throw keyError("KEY_INVALID", "subjectPublicKey BIT STRING has unused bits");
  switch (alg.oid) {
    case OID.rsaEncryption:
      return rsaKey(spki.viewReader(key.bytes), spkiDer, alg);
    case OID.ecPublicKey:
      return ecKey(key.bytes, spkiDer, alg);
    case OID.ed25519:
      if (alg.params !== undefined) throw keyError("KEY_INVALID", "Ed25519 key must not have algorithm parameters");
      if (key.bytes.length !== 32) throw keyError("KEY_INVALID", `Ed25519 key must be 32 bytes, got ${key.bytes.length}`);
      return {
        info: { algorithm: "ed25519", bits: 256, spki: spkiDer },
        jwk: { kty: "OKP", crv: "Ed25519", x: b64url(key.bytes) },
      };
    case OID.dsa:
      throw keyError("KEY_UNSUPPORTED", `DSA keys are not accepted; ${ACCEPTED_KEYS}`);
    default:
      throw keyError("KEY_UNSUPPORTED", `key algorithm ${describeOid(alg.oid)} is not accepted; ${ACCEPTED_KEYS}`);
  }
}

function rsaKey(outer: DerReader, spkiDer: Uint8Array, alg: Algorithm): KeyMaterial {
  if (!paramsAbsentOrNull(alg)) throw keyError("KEY_INVALID", "RSA key algorithm parameters must be NULL");
  const rsa = outer.sequence("RSAPublicKey");
  outer.finish("RSAPublicKey");
  const n = rsa.unsignedInteger("RSA modulus");
  const e = rsa.unsignedInteger("RSA public exponent");
  rsa.finish("RSAPublicKey");
  const bits = bitLength(n);
  if (bits < RSA_MIN_BITS) throw keyError("KEY_TOO_WEAK", `RSA key of ${bits} bits is below the ${RSA_MIN_BITS}-bit minimum`);
  if (bits > RSA_MAX_BITS) throw keyError("KEY_TOO_WEAK", `RSA key of ${bits} bits is above the ${RSA_MAX_BITS}-bit maximum`);
  if ((n[n.length - 1]! & 1) === 0) throw keyError("KEY_INVALID", "RSA modulus is even");
  if ((e[e.length - 1]! & 1) === 0 || bitLength(e) < 2 || e.length > 8) {
    throw keyError("KEY_INVALID", "RSA public exponent must be odd, at least 3 and at most 64 bits");
  }
  const info: PublicKeyInfo = { algorithm: "rsa", bits, spki: spkiDer };
  // The JWK is only needed when node:crypto verifies (no accelerator, or RSASSA-PSS): built on demand.
  return {
    info,
    rsa: { n, e },
    get jwk(): JsonWebKey {
      return { kty: "RSA", n: b64url(n), e: b64url(e) };
    },
  };
}

function ecKey(bytes: Uint8Array, spkiDer: Uint8Array, alg: Algorithm): KeyMaterial {
  const params = alg.params;
  if (params === undefined || params.tag !== Tag.OID) {
    const form = params?.tag === Tag.SEQUENCE ? "explicit curve parameters" : "a curve that is not named";
    throw keyError("KEY_UNSUPPORTED", `EC key with ${form} is not accepted; ${ACCEPTED_KEYS}`);
  }
  const oid = alg.reader.over(params).oid("named curve");
  const curve = CURVES[oid];
  if (curve === undefined) throw keyError("KEY_UNSUPPORTED", `EC curve ${describeOid(oid)} is not accepted; ${ACCEPTED_KEYS}`);
  const info: PublicKeyInfo = { algorithm: "ecdsa", bits: curve.bits, curve: curve.curve, spki: spkiDer };
  const form = bytes[0];
  if (form === 0x04 && bytes.length === 1 + 2 * curve.size) {
    return {
      info,
      ecPoint: bytes,
      get jwk(): JsonWebKey {
        return { kty: "EC", crv: curve.curve, x: b64url(bytes.subarray(1, 1 + curve.size)), y: b64url(bytes.subarray(1 + curve.size)) };
      },
    };
  }
  // JWK cannot carry a compressed point; these rare keys take the slower SPKI import.
  if ((form === 0x02 || form === 0x03) && bytes.length === 1 + curve.size) return { info, jwk: undefined };
  throw keyError("KEY_INVALID", `EC point of ${bytes.length} bytes is not a valid ${curve.curve} point encoding`);
}

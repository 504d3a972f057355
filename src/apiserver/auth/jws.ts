// Compact JWS of bearer JWTs: splitting and decoding, and signature checks with node:crypto (RS*, PS*, ES* only).
import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";

/** Asymmetric algorithms only, as upstream: a shared secret or `none` never authenticates. */
export const JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

const CURVE_OF: Record<string, string> = { ES256: "prime256v1", ES384: "secp384r1", ES512: "secp521r1" };

export interface CompactJws {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  readonly signingInput: Buffer;
  readonly signature: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

function json(segment: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(segment, "base64url").toString("utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The parts of `header.payload.signature`, or undefined when the text is not a compact JWS with JSON object parts. */
export function parseCompactJws(token: string): CompactJws | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p) => B64URL.test(p))) return undefined;
  const header = json(parts[0]!);
  const payload = json(parts[1]!);
  if (!header || !payload) return undefined;
  return { header, payload, signingInput: Buffer.from(`${parts[0]}.${parts[1]}`), signature: Buffer.from(parts[2]!, "base64url") };
}

export const isJwtAlgorithm = (alg: unknown): alg is JwtAlgorithm => (JWT_ALGORITHMS as readonly unknown[]).includes(alg);

/** A JWK as a public key usable with `alg`, or undefined when its type, curve or size does not fit (RSA below 2048 bits is refused). */
export function publicKeyFor(jwk: JsonWebKey, alg: JwtAlgorithm): KeyObject | undefined {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: jwk, format: "jwk" });
  } catch {
    return undefined;
  }
  if (alg.startsWith("ES")) return key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === CURVE_OF[alg] ? key : undefined;
  return key.asymmetricKeyType === "rsa" && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= 2048 ? key : undefined;
}

/** Whether `jws` carries a valid `alg` signature by `key` (ECDSA as r‖s, PSS with the digest's length as salt). */
export function verifyJws(jws: CompactJws, alg: JwtAlgorithm, key: KeyObject): boolean {
  const hash = `sha${alg.slice(2)}`;
  try {
    if (alg.startsWith("ES")) return verify(hash, jws.signingInput, { key, dsaEncoding: "ieee-p1363" }, jws.signature);
    if (alg.startsWith("PS")) return verify(hash, jws.signingInput, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }, jws.signature);
    return verify(hash, jws.signingInput, key, jws.signature);
  } catch {
    return false;
  }
}

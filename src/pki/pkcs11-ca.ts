// CA keys that never leave a PKCS#11 token: sign through it, load a CA certificate with it, generate one in it.
import { createHash, createPublicKey, randomBytes, verify, constants, type KeyObject } from "node:crypto";
import type { Mechanism, RsaPSS, Template } from "pkcs11js";
import { PlatformError } from "../errors.js";
import { caFromPemWithSigner, selfSignedCaParts, type CaFromPemOptions } from "./ca.js";
import { DerReader } from "./der.js";
import { assembleCertificate, DER_NULL, explicit, integer, objectIdentifier, sequence } from "./der-writer.js";
import { OID } from "./oids.js";
import { encodePem } from "./pem.js";
import { parsePkcs11Uri, type Pkcs11KeyRef } from "./pkcs11-uri.js";
import { Token, tokenError } from "./pkcs11-token.js";
import { signatureScheme } from "./tbs-template.js";
import type { CaKeyPair, CaKeySigner, NamedCurve } from "./types.js";

/** How a token key signs: ECDSA on its curve, RSA PKCS#1 v1.5, or RSA-PSS (SHA-256, MGF1-SHA-256, 32-byte salt). */
export type TokenSignature = { readonly kind: "ecdsa"; readonly curve: NamedCurve } | { readonly kind: "rsa" } | { readonly kind: "rsa-pss" };

export type TokenKeyType = "ecdsa-p256" | "ecdsa-p384" | "rsa-2048" | "rsa-3072";
export const TOKEN_KEY_TYPES: readonly TokenKeyType[] = ["ecdsa-p256", "ecdsa-p384", "rsa-2048", "rsa-3072"];

const CURVES: Partial<Record<NamedCurve, { oid: string; hash: "sha256" | "sha384"; size: number }>> = {
  "P-256": { oid: "1.2.840.10045.3.1.7", hash: "sha256", size: 32 },
  "P-384": { oid: "1.3.132.0.34", hash: "sha384", size: 48 },
};
/** DigestInfo prefix of SHA-256 (RFC 8017 §9.2 note 1): CKM_RSA_PKCS signs DigestInfo, we hash in the process. */
const SHA256_DIGEST_INFO = Buffer.from("3031300d060960864801650304020105000420", "hex");
const SHA256_ALGORITHM = sequence(objectIdentifier(OID.sha256), DER_NULL);
/** RSASSA-PSS-params with SHA-256, MGF1(SHA-256), salt 32 (RFC 4055); trailerField default. */
export const RSA_PSS_ALGORITHM = sequence(
  objectIdentifier(OID.rsassaPss),
  sequence(explicit(0, SHA256_ALGORITHM), explicit(1, sequence(objectIdentifier(OID.mgf1), SHA256_ALGORITHM)), explicit(2, integer(32))),
);

/** A private key in a token, found by the URI's object/id; exactly one must match. */
export class TokenKey {
  readonly token: Token;
  readonly ref: Pkcs11KeyRef;
  #handle: Buffer;
  /** The token's generation the handle was found in; after a reconnect the key is looked up again. */
  #generation: number;

  private constructor(token: Token, ref: Pkcs11KeyRef, handle: Buffer) {
    this.token = token;
    this.ref = ref;
    this.#handle = handle;
    this.#generation = token.generation;
  }

  static async open(uri: string, env?: Readonly<Record<string, string | undefined>>): Promise<TokenKey> {
    const ref = parsePkcs11Uri(uri);
    const token = await Token.open(ref, env);
    return new TokenKey(token, ref, await token.withSession("finding the key", (s) => findKey(token, ref, s), ref));
  }

  /** A CaKeySigner: hashes in the process and has the token sign the digest, off the event loop. */
  signer(signature: TokenSignature): CaKeySigner {
    const { lib, module } = this.token;
    let mechanism: Mechanism;
    let input: (data: Uint8Array) => Buffer;
    let output: (raw: Buffer) => Uint8Array = (raw) => new Uint8Array(raw);
    let algorithmDer: Uint8Array;
    if (signature.kind === "ecdsa") {
      const curve = CURVES[signature.curve];
      if (curve === undefined) throw new PlatformError("KEY_UNSUPPORTED", `${this.ref.display}: ECDSA on ${signature.curve} is not supported in a token; use P-256 or P-384`);
      // SoftHSM2 2.6 refuses CKM_ECDSA_SHA256: sign the digest with CKM_ECDSA; the token returns r‖s.
      mechanism = { mechanism: lib.CKM_ECDSA };
      input = (data) => createHash(curve.hash).update(data).digest();
      output = (raw) => sequence(integer(raw.subarray(0, raw.length / 2)), integer(raw.subarray(raw.length / 2)));
      algorithmDer = signatureScheme("ecdsa", signature.curve).algorithmDer;
    } else if (signature.kind === "rsa") {
      mechanism = { mechanism: lib.CKM_RSA_PKCS };
      input = (data) => Buffer.concat([SHA256_DIGEST_INFO, createHash("sha256").update(data).digest()]);
      algorithmDer = signatureScheme("rsa").algorithmDer;
    } else {
      mechanism = { mechanism: lib.CKM_RSA_PKCS_PSS, parameter: { type: lib.CK_PARAMS_RSA_PSS, hashAlg: lib.CKM_SHA256, mgf: lib.CKG_MGF1_SHA256, saltLen: 32 } as RsaPSS };
      input = (data) => createHash("sha256").update(data).digest();
      algorithmDer = RSA_PSS_ALGORITHM;
    }
    const sign = async (data: Uint8Array): Promise<Uint8Array> => {
      const digest = input(data);
      const raw = await this.token.withSession("signing", async (session) => {
        if (this.token.generation !== this.#generation) {
          this.#handle = findKey(this.token, this.ref, session);
          this.#generation = this.token.generation;
        }
        module.C_SignInit(session, mechanism, this.#handle);
        return module.C_SignAsync(session, digest, Buffer.alloc(1024));
      }, this.ref);
      return output(raw);
    };
    return { algorithmDer, sign };
  }
}

function keyTemplate(token: Token, ref: Pkcs11KeyRef, cls: number): Template {
  const { lib } = token;
  return [
    { type: lib.CKA_CLASS, value: cls },
    ...(ref.object !== undefined ? [{ type: lib.CKA_LABEL, value: ref.object }] : []),
    ...(ref.id !== undefined ? [{ type: lib.CKA_ID, value: Buffer.from(ref.id) }] : []),
  ];
}

function findObjects(token: Token, session: Buffer, template: Template): Buffer[] {
  const { module } = token;
  module.C_FindObjectsInit(session, template);
  try {
    return module.C_FindObjects(session, 2);
  } finally {
    module.C_FindObjectsFinal(session);
  }
}

function findKey(token: Token, ref: Pkcs11KeyRef, session: Buffer): Buffer {
  const found = findObjects(token, session, keyTemplate(token, ref, token.lib.CKO_PRIVATE_KEY));
  if (found.length === 1) return found[0]!;
  const what = found.length === 0 ? "no private key" : "more than one private key";
  throw new PlatformError("HSM_KEY_NOT_FOUND", `${ref.display}: ${what} in the token matches the URI's object/id`);
}

/** How the CA certificate says its key signs: by key type, and RSA-PSS when the certificate itself is PSS-signed. */
function signatureFor(ca: CaKeyPair, certDer: Uint8Array): TokenSignature {
  if (ca.keyAlgorithm === "ecdsa") return { kind: "ecdsa", curve: ca.curve! };
  if (ca.keyAlgorithm !== "rsa") throw new PlatformError("KEY_UNSUPPORTED", `a ${ca.keyAlgorithm} CA key in a token is not supported; use ECDSA P-256/P-384 or RSA`);
  const cert = new DerReader(certDer).sequence("certificate");
  cert.next();
  const algorithm = cert.sequence("signatureAlgorithm").oid("algorithm");
  return { kind: algorithm === OID.rsassaPss ? "rsa-pss" : "rsa" };
}

/** Checks that the token key made `signature` over `data` as the certificate's public key expects. */
function verifies(publicKey: KeyObject, signature: TokenSignature, data: Uint8Array, value: Uint8Array): boolean {
  const hash = signature.kind === "ecdsa" ? CURVES[signature.curve]!.hash : "sha256";
  const key = signature.kind === "rsa-pss" ? { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } : publicKey;
  return verify(hash, data, key, value);
}

/** A CA certificate (PEM, optionally with its chain) whose key is the token key `uri` names; KEY_MISMATCH if not its key. */
export async function loadTokenCa(certPem: string, uri: string, options: CaFromPemOptions & { env?: Readonly<Record<string, string | undefined>> } = {}): Promise<CaKeyPair> {
  const probe = caFromPemWithSigner(certPem, { algorithmDer: new Uint8Array(), sign: () => Promise.reject(new Error("not used")) }, options);
  const key = await TokenKey.open(uri, options.env);
  const signature = signatureFor(probe, probe.certDer);
  const signer = key.signer(signature);
  const challenge = randomBytes(32);
  if (!verifies(probe.publicKey, signature, challenge, await signer.sign(challenge))) {
    throw new PlatformError("KEY_MISMATCH", `${key.ref.display} does not belong to ${options.certName ?? "the CA certificate"}`);
  }
  return caFromPemWithSigner(certPem, signer, options);
}

export interface TokenCaOptions {
  readonly uri: string;
  readonly commonName: string;
  readonly keyType: TokenKeyType;
  /** RSA keys: sign with RSASSA-PSS instead of PKCS#1 v1.5 (the CA certificate records the choice). */
  readonly rsaPss?: boolean;
  readonly lifetimeSeconds: number;
  readonly now: Date;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Generates a non-extractable key pair in the token (refusing to reuse a label/id) and a self-signed CA certificate for it. */
export async function generateTokenCa(o: TokenCaOptions): Promise<{ readonly certPem: string; readonly ca: CaKeyPair }> {
  if (!TOKEN_KEY_TYPES.includes(o.keyType)) throw new PlatformError("INVALID_ARGUMENT", `key type must be one of ${TOKEN_KEY_TYPES.join(", ")}, got ${o.keyType}`);
  if (o.rsaPss && !o.keyType.startsWith("rsa")) throw new PlatformError("INVALID_ARGUMENT", "RSA-PSS needs an RSA key type");
  const ref = parsePkcs11Uri(o.uri);
  const token = await Token.open(ref, o.env);
  const { lib, module } = token;
  const spki = await token.withSession("generating the key", async (session) => {
    if (findObjects(token, session, keyTemplate(token, ref, lib.CKO_PRIVATE_KEY)).length > 0) {
      throw new PlatformError("ALREADY_EXISTS", `${ref.display}: the token already holds a private key with this object/id; choose another or delete it`);
    }
    const named = [
      { type: lib.CKA_TOKEN, value: true },
      ...(ref.object !== undefined ? [{ type: lib.CKA_LABEL, value: ref.object }] : []),
      { type: lib.CKA_ID, value: Buffer.from(ref.id ?? randomBytes(16)) },
    ];
    const isEc = o.keyType.startsWith("ecdsa");
    const curve = CURVES[o.keyType === "ecdsa-p384" ? "P-384" : "P-256"]!;
    const publicTemplate = isEc
      ? [...named, { type: lib.CKA_VERIFY, value: true }, { type: lib.CKA_EC_PARAMS, value: Buffer.from(objectIdentifier(curve.oid)) }]
      : [...named, { type: lib.CKA_VERIFY, value: true }, { type: lib.CKA_MODULUS_BITS, value: Number(o.keyType.slice(4)) }, { type: lib.CKA_PUBLIC_EXPONENT, value: Buffer.from([1, 0, 1]) }];
    const privateTemplate = [...named, { type: lib.CKA_SIGN, value: true }, { type: lib.CKA_PRIVATE, value: true }, { type: lib.CKA_SENSITIVE, value: true }, { type: lib.CKA_EXTRACTABLE, value: false }];
    const mechanism = { mechanism: isEc ? lib.CKM_EC_KEY_PAIR_GEN : lib.CKM_RSA_PKCS_KEY_PAIR_GEN };
    const keys = await module.C_GenerateKeyPairAsync(session, mechanism, publicTemplate, privateTemplate);
    let jwk: Record<string, string>;
    if (isEc) {
      const [{ value }] = module.C_GetAttributeValue(session, keys.publicKey, [{ type: lib.CKA_EC_POINT }]) as unknown as [{ value: Buffer }];
      // CKA_EC_POINT is the DER OCTET STRING of the uncompressed point 04‖x‖y.
      const point = value[0] === 0x04 && value[1] === value.length - 2 ? value.subarray(2) : value;
      jwk = { kty: "EC", crv: o.keyType === "ecdsa-p384" ? "P-384" : "P-256", x: point.subarray(1, 1 + curve.size).toString("base64url"), y: point.subarray(1 + curve.size).toString("base64url") };
    } else {
      const [n, e] = module.C_GetAttributeValue(session, keys.publicKey, [{ type: lib.CKA_MODULUS }, { type: lib.CKA_PUBLIC_EXPONENT }]) as { value: Buffer }[];
      jwk = { kty: "RSA", n: n!.value.toString("base64url"), e: e!.value.toString("base64url") };
    }
    return new Uint8Array(createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "der" }));
  }, ref).catch((err: unknown) => {
    throw tokenError(ref, "generating the key", err);
  });
  const key = await TokenKey.open(o.uri, o.env);
  const signature: TokenSignature = o.keyType.startsWith("ecdsa")
    ? { kind: "ecdsa", curve: o.keyType === "ecdsa-p384" ? "P-384" : "P-256" }
    : { kind: o.rsaPss ? "rsa-pss" : "rsa" };
  const signer = key.signer(signature);
  const tbs = sequence(...selfSignedCaParts({ commonName: o.commonName, spki, lifetimeSeconds: o.lifetimeSeconds, now: o.now, algorithmDer: signer.algorithmDer }));
  const certPem = encodePem("CERTIFICATE", assembleCertificate(tbs, signer.algorithmDer, await signer.sign(tbs)));
  return { certPem, ca: caFromPemWithSigner(certPem, signer) };
}

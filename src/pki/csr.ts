// PKCS#10 parsing and self-signature verification on the hot path: DER read by hand, keys imported as JWK.
//
// Importing the public key dominates the cost of a CSR: node imports a JWK roughly twice (EC) to four
// times (RSA) faster than SPKI DER, so the JWK is built from the SPKI fields read here.
import { Buffer } from "node:buffer";
import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";
import { invalidOption, PlatformError } from "../errors.js";
import { DerReader, Tag, contextTag, type Tlv } from "./der.js";
import { noSans, readGeneralNames, readName } from "./names.js";
import { describeOid, OID } from "./oids.js";
import { checkMaxBytes, decodeSinglePem } from "./pem.js";
import type { Extension, KeyAlgorithm, NamedCurve, ParsedCsr, PublicKeyInfo, SubjectAltNames } from "./types.js";
import { nativeCrypto, nativeHashBits } from "./native.js";
import { copyBytes } from "./bytes.js";
import { SharedVerifiedMemo } from "./verified-memo.js";

export interface ParseCsrOptions {
  /** Upper bound on the input size in bytes (default 64 KiB). */
  readonly maxBytes?: number;
  /** Check the self-signature (default true). */
  readonly verify?: boolean;
  /**
   * Consult and fill the process-wide memory of recently verified requests (default true). Callers that see
   * each request once (a signing worker thread) turn it off: it can never hit there, and keying it costs.
   */
  readonly remember?: boolean;
}

export const CSR_MAX_BYTES = 64 * 1024;
export const CSR_PEM_LABELS: readonly string[] = ["CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"];
export const RSA_MIN_BITS = 2048;
export const RSA_MAX_BITS = 8192;

const CURVES: Readonly<Record<string, { readonly curve: NamedCurve; readonly bits: number; readonly size: number }>> = {
  [OID.p256]: { curve: "P-256", bits: 256, size: 32 },
  [OID.p384]: { curve: "P-384", bits: 384, size: 48 },
  [OID.p521]: { curve: "P-521", bits: 521, size: 66 },
};

type Hash = "sha256" | "sha384" | "sha512";
const HASHES: Readonly<Record<string, Hash>> = { [OID.sha256]: "sha256", [OID.sha384]: "sha384", [OID.sha512]: "sha512" };

const SIGNATURES: Readonly<Record<string, { readonly key: KeyAlgorithm; readonly hash: Hash | null }>> = {
  [OID.sha256WithRsa]: { key: "rsa", hash: "sha256" },
  [OID.sha384WithRsa]: { key: "rsa", hash: "sha384" },
  [OID.sha512WithRsa]: { key: "rsa", hash: "sha512" },
  [OID.ecdsaWithSha256]: { key: "ecdsa", hash: "sha256" },
  [OID.ecdsaWithSha384]: { key: "ecdsa", hash: "sha384" },
  [OID.ecdsaWithSha512]: { key: "ecdsa", hash: "sha512" },
  [OID.ed25519]: { key: "ed25519", hash: null },
};

const BROKEN_HASH_SIGNATURES = new Set<string>([OID.md5WithRsa, OID.sha1WithRsa, OID.ecdsaWithSha1, OID.dsaWithSha1]);

const csrError = (message: string): PlatformError => new PlatformError("CSR_INVALID", message);

interface KeyMaterial {
  readonly info: PublicKeyInfo;
  /** JWK to import, or undefined when only the SPKI DER form can express the key (compressed EC points). */
  readonly jwk: JsonWebKey | undefined;
  /** Uncompressed EC point, for the native verifier. */
  readonly ecPoint?: Uint8Array;
  /** RSA modulus and exponent, for the native verifier. */
  readonly rsa?: { readonly n: Uint8Array; readonly e: Uint8Array };
}

interface SignatureCheck {
  readonly hash: Hash | null;
  /** RSASSA-PSS salt length; undefined for PKCS#1 v1.5, ECDSA and Ed25519. */
  readonly pssSaltLength?: number;
}

/** Parses a PKCS#10 request (PEM `CERTIFICATE REQUEST` / `NEW CERTIFICATE REQUEST`, or DER) and verifies its signature. */
export function parseCsr(input: string | Uint8Array, opts: ParseCsrOptions = {}): ParsedCsr {
  const maxBytes = opts.maxBytes ?? CSR_MAX_BYTES;
  checkMaxBytes(maxBytes);
  if (opts.verify !== undefined && typeof opts.verify !== "boolean") throw invalidOption("verify", "to be a boolean", opts.verify);
  const der = csrDer(input, maxBytes);

  const top = new DerReader(der);
  const csrTlv = top.next(Tag.SEQUENCE, "CertificationRequest");
  top.finish("CertificationRequest");
  const csr = top.child(csrTlv);
  const infoTlv = csr.next(Tag.SEQUENCE, "CertificationRequestInfo");
  const sigAlg = readAlgorithm(csr, "signatureAlgorithm");
  const signature = csr.bitString("signature");
  csr.finish("CertificationRequest");
  if (signature.unusedBits !== 0) throw csrError("signature BIT STRING has unused bits");

  const info = csr.child(infoTlv);
  const version = info.smallInteger("version");
  if (version !== 0) throw csrError(`version must be 0 (v1), got ${version}`);
  // Copied into the certificate as it is: only values OpenSSL reads back.
  const subject = readName(info, "subject", true);
  const key = readPublicKey(info);
  // Some encoders omit the [0] attributes field entirely when there are none.
  const attrsTlv = info.hasMore() ? info.next(contextTag(0, true), "attributes") : undefined;
  info.finish("CertificationRequestInfo");
  const extensions = attrsTlv === undefined ? [] : readAttributes(info.child(attrsTlv));
  const sans = readSans(der, extensions);

  const check = signatureCheck(sigAlg, key.info.algorithm);
  if (opts.verify !== false) {
    if (opts.remember === false) verifySignature(key, check, info.bytes(infoTlv), signature.bytes);
    else verifySignatureOnce(der, key, check, info.bytes(infoTlv), signature.bytes);
  }

  return { der, subject, sans, extensions, publicKey: key.info, signatureAlgorithm: sigAlg.oid };
}

/** The DER of a request given as PEM text or bytes (read no further); throws what its PEM armour or size has wrong. */
export function csrDer(input: string | Uint8Array, maxBytes = CSR_MAX_BYTES): Uint8Array {
  if (typeof input === "string") {
    if (input.length > maxBytes) throw tooLarge(input.length, maxBytes);
    return decodeSinglePem(input, CSR_PEM_LABELS).der;
  }
  if (!(input instanceof Uint8Array)) throw csrError(`expected PEM text or DER bytes, got ${typeof input}`);
  if (input.length > maxBytes) throw tooLarge(input.length, maxBytes);
  // DER starts with a SEQUENCE tag; anything else is read as PEM text. The copy keeps the result
  // (whose views are handed to issuance) independent of a buffer the caller may reuse.
  if (input[0] === Tag.SEQUENCE) return copyBytes(input);
  return decodeSinglePem(Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString("latin1"), CSR_PEM_LABELS).der;
}

function tooLarge(size: number, maxBytes: number): PlatformError {
  return new PlatformError("INPUT_TOO_LARGE", `CSR is ${size} bytes, above the limit of ${maxBytes}`);
}

interface Algorithm {
  readonly oid: string;
  readonly params: Tlv | undefined;
  readonly reader: DerReader;
}

function readAlgorithm(reader: DerReader, what: string): Algorithm {
  const alg = reader.sequence(what);
  const oid = alg.oid(`${what} algorithm`);
  const params = alg.hasMore() ? alg.next(undefined, `${what} parameters`) : undefined;
  alg.finish(what);
  return { oid, params, reader: alg };
}

function paramsAbsentOrNull(alg: Algorithm): boolean {
  return alg.params === undefined || (alg.params.tag === Tag.NULL && alg.params.end === alg.params.contentStart);
}

// ---- attributes and extensions ----

function readAttributes(attrs: DerReader): Extension[] {
  let extensions: Extension[] | undefined;
  while (attrs.hasMore()) {
    const attr = attrs.sequence("attribute");
    const type = attr.oid("attribute type");
    const valuesTlv = attr.next(Tag.SET, "attribute values");
    attr.finish("attribute");
    if (type !== OID.extensionRequest && type !== OID.msExtensionRequest) continue;
    if (extensions !== undefined) throw csrError("more than one extensionRequest attribute");
    const values = attr.child(valuesTlv);
    const list = values.sequence("extensionRequest");
    if (values.hasMore()) throw csrError("extensionRequest attribute has more than one value");
    extensions = readExtensions(list);
  }
  return extensions ?? [];
}

function readExtensions(list: DerReader): Extension[] {
  const out: Extension[] = [];
  const seen = new Set<string>();
  while (list.hasMore()) {
    const ext = list.sequence("extension");
    const oid = ext.oid("extension id");
    // DER omits a FALSE default, but widely used encoders write it out; accept both forms.
    const critical = ext.peekTag() === Tag.BOOLEAN ? ext.boolean("extension critical flag") : false;
    const valueTlv = ext.next(Tag.OCTET_STRING, "extension value");
    ext.finish("extension");
    if (seen.has(oid)) throw csrError(`extension ${oid} is requested more than once`);
    seen.add(oid);
    // The value may be copied into a certificate verbatim: it must be exactly one well-formed element.
    const inner = ext.child(valueTlv);
    inner.next(undefined, `extension ${oid} value`);
    inner.finish(`extension ${oid} value`);
    out.push({ oid, critical, value: ext.contents(valueTlv) });
  }
  return out;
}

function readSans(der: Uint8Array, extensions: readonly Extension[]): SubjectAltNames {
  const san = extensions.find((e) => e.oid === OID.subjectAltName);
  if (san === undefined) return noSans();
  const reader = new DerReader(der).viewReader(san.value);
  const sans = readGeneralNames(reader, "subjectAltName");
  reader.finish("subjectAltName");
  return sans;
}

// ---- public key ----

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

function readPublicKey(reader: DerReader): KeyMaterial {
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

// ---- signature ----

function signatureCheck(alg: Algorithm, keyAlgorithm: KeyAlgorithm): SignatureCheck {
  if (BROKEN_HASH_SIGNATURES.has(alg.oid)) {
    throw csrError(`signature algorithm ${describeOid(alg.oid)} is refused: SHA-1 and MD5 are broken for collision resistance`);
  }
  if (alg.oid === OID.rsassaPss) {
    if (keyAlgorithm !== "rsa") throw csrError(`signature algorithm RSASSA-PSS does not match the ${keyAlgorithm} key`);
    return pssParams(alg);
  }
  const sig = SIGNATURES[alg.oid];
  if (sig === undefined) throw csrError(`signature algorithm ${describeOid(alg.oid)} is not supported`);
  if (sig.key !== keyAlgorithm) throw csrError(`signature algorithm ${describeOid(alg.oid)} does not match the ${keyAlgorithm} key`);
  // RFC 4055 allows NULL or absent parameters for PKCS#1 v1.5; RFC 5758 and RFC 8410 require them absent.
  const ok = sig.key === "rsa" ? paramsAbsentOrNull(alg) : alg.params === undefined;
  if (!ok) throw csrError(`signature algorithm ${describeOid(alg.oid)} has unexpected parameters`);
  return { hash: sig.hash };
}

// RSASSA-PSS-params (RFC 4055): [0] hash, [1] MGF1 with a hash, [2] salt length, [3] trailer field (must be 1).
function pssParams(alg: Algorithm): SignatureCheck {
  if (alg.params?.tag !== Tag.SEQUENCE) throw csrError("RSASSA-PSS parameters are missing (the SHA-1 defaults are refused)");
  const p = alg.reader.child(alg.params);
  let hash: Hash | undefined;
  let mgfHash: Hash | undefined;
  let saltLength = 20;
  const t0 = p.optional(contextTag(0, true), "PSS hashAlgorithm");
  if (t0 !== undefined) hash = pssHash(readAlgorithmIn(p, t0, "PSS hashAlgorithm"));
  const t1 = p.optional(contextTag(1, true), "PSS maskGenAlgorithm");
  if (t1 !== undefined) {
    const mgf = readAlgorithmIn(p, t1, "PSS maskGenAlgorithm");
    if (mgf.oid !== OID.mgf1 || mgf.params?.tag !== Tag.SEQUENCE) throw csrError("RSASSA-PSS mask generation must be MGF1");
    mgfHash = pssHash(readAlgorithm(mgf.reader.over(mgf.params), "MGF1 hash"));
  }
  const t2 = p.optional(contextTag(2, true), "PSS saltLength");
  if (t2 !== undefined) {
    const r = p.child(t2);
    saltLength = r.smallInteger("PSS saltLength");
    r.finish("PSS saltLength");
    if (saltLength < 0 || saltLength > 1024) throw csrError(`RSASSA-PSS salt length ${saltLength} is out of range`);
  }
  const t3 = p.optional(contextTag(3, true), "PSS trailerField");
  if (t3 !== undefined) {
    const r = p.child(t3);
    if (r.smallInteger("PSS trailerField") !== 1) throw csrError("RSASSA-PSS trailer field must be 1");
    r.finish("PSS trailerField");
  }
  p.finish("RSASSA-PSS parameters");
  if (hash === undefined || mgfHash === undefined) throw csrError("RSASSA-PSS with the SHA-1 default hash is refused");
  if (hash !== mgfHash) throw csrError(`RSASSA-PSS MGF1 hash ${mgfHash} differs from the message hash ${hash}`);
  return { hash, pssSaltLength: saltLength };
}

function readAlgorithmIn(parent: DerReader, tlv: Tlv, what: string): Algorithm {
  const r = parent.child(tlv);
  const alg = readAlgorithm(r, what);
  r.finish(what);
  return alg;
}

function pssHash(alg: Algorithm): Hash {
  const hash = HASHES[alg.oid];
  if (hash === undefined) throw csrError(`RSASSA-PSS hash ${describeOid(alg.oid)} is refused; use SHA-256, SHA-384 or SHA-512`);
  if (!paramsAbsentOrNull(alg)) throw csrError("RSASSA-PSS hash parameters must be NULL or absent");
  return hash;
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

function verifySignatureOnce(der: Uint8Array, key: KeyMaterial, check: SignatureCheck, tbs: Uint8Array, signature: Uint8Array): void {
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

function verifySignature(key: KeyMaterial, check: SignatureCheck, tbs: Uint8Array, signature: Uint8Array): void {
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

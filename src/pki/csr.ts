// PKCS#10 parsing on the hot path: the request's DER read by hand; its key is read in csr-public-key.ts and its
// self-signature checked in csr-signature.ts.
import { Buffer } from "node:buffer";
import { invalidOption, PlatformError } from "../errors.js";
import { DerReader, Tag, contextTag, type Tlv } from "./der.js";
import { noSans, readGeneralNames, readName } from "./names.js";
import { describeOid, OID } from "./oids.js";
import { checkMaxBytes, decodeSinglePem } from "./pem.js";
import type { Extension, KeyAlgorithm, ParsedCsr, SubjectAltNames } from "./types.js";
import { copyBytes } from "./bytes.js";
import { paramsAbsentOrNull, readAlgorithm, readPublicKey, type Algorithm } from "./csr-public-key.js";
import { verifySignature, verifySignatureOnce, type Hash, type SignatureCheck } from "./csr-signature.js";

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

// ---- signature algorithm ----

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

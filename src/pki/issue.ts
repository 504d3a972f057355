// The issuance fast path: a certificate from a parsed CSR, a profile and a validity, signed by one CA.
//
// The DER is assembled by hand (see der-writer.ts for why): everything constant for a CA (version, signature
// algorithm, issuer Name, AuthorityKeyIdentifier) is encoded once in the constructor, the extensions of a profile
// once per distinct profile, and per certificate only the serial, validity, subject, key and SKI are added.
import { PlatformError } from "../errors.js";
import { assembleCertificate, headerLength, writeHeader } from "./der-writer.js";
import { Tag } from "./der.js";
import { allocBytes, hex } from "./bytes.js";
import { subjectKeyIdentifier } from "./keys.js";
import { OID } from "./oids.js";
import { encodePem } from "./pem.js";
import { rememberVerified, unverifiedKey } from "./csr-signature.js";
import { issueOneNative, nativeBatchAvailable, packTemplate, type NativeTemplate } from "./native-issue.js";
import {
  authorityKeyIdentifierExtension,
  basicConstraintsExtension,
  caSignFunction,
  extension,
  extKeyUsageExtension,
  keyUsageExtension,
  nativeCaKey,
  randomSerial,
  signatureScheme,
  subjectKeyIdentifierExtension,
  validityDer,
  VERSION_V3,
  type CaSignFunction,
  type NativeCaKey,
  type SignatureScheme,
} from "./tbs-template.js";
import type { CaKeyPair, CertificateProfile, ParsedCsr, Validity } from "./types.js";

export interface IssueRequest {
  readonly csr: ParsedCsr;
  readonly profile: CertificateProfile;
  readonly validity: Validity;
  /** Pre-encoded extensions the signer adds to every certificate (e.g. CRL Distribution Points), appended as given. */
  readonly signerExtensions?: readonly Uint8Array[];
}

export interface IssuedCertificate {
  readonly der: Uint8Array;
  readonly pem: string;
  /** Serial number as lowercase hex (32 digits). */
  readonly serialHex: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** Extensions the issuer writes itself; a CSR cannot have them copied even when a profile lists them. */
const MANAGED_EXTENSIONS: ReadonlySet<string> = new Set([
  OID.basicConstraints,
  OID.keyUsage,
  OID.extKeyUsage,
  OID.subjectKeyIdentifier,
  OID.authorityKeyIdentifier,
  OID.subjectAltName,
  OID.cRLDistributionPoints,
]);

const EMPTY_NAME_LENGTH = 2; // SEQUENCE {} — 30 00
const SERIAL_HEADER = Uint8Array.of(Tag.INTEGER, 16);
const EXTENSIONS_TAG = 0xa3; // [3] EXPLICIT
const PROFILE_CACHE_LIMIT = 256;

/** Issues certificates for one CA; build it once per CA (it precomputes the constant parts) and reuse it. */
export class Issuer {
  readonly ca: CaKeyPair;
  private readonly scheme: SignatureScheme;
  /** The in-process sign function; undefined when the key is in a token (ca.keySigner, issueAsync). */
  private readonly signer: CaSignFunction | undefined;
  private readonly authorityKeyId: Uint8Array;
  private readonly profileExtensions = new Map<string, readonly Uint8Array[]>();
  private readonly profileObjects = new WeakMap<CertificateProfile, readonly Uint8Array[]>();
  private lastValidity: { readonly from: number; readonly to: number; readonly der: Uint8Array } | undefined;
  /** The CA key as native/issue.c signs with it; null when it is not held natively (token, Ed25519, no accelerator). */
  private readonly nativeKey: NativeCaKey | null;
  private lastTemplate: { readonly profile: CertificateProfile; readonly extensions: unknown; readonly validity: Uint8Array; readonly template: NativeTemplate | undefined } | undefined;

  constructor(ca: CaKeyPair) {
    this.ca = ca;
    const scheme = signatureScheme(ca.keyAlgorithm, ca.curve);
    this.scheme = ca.keySigner ? { ...scheme, algorithmDer: ca.keySigner.algorithmDer } : scheme;
    this.nativeKey = ca.privateKey ? nativeCaKey(this.scheme, ca.privateKey) : null;
    this.signer = ca.privateKey ? caSignFunction(this.scheme, ca.privateKey, this.nativeKey) : undefined;
    this.authorityKeyId = authorityKeyIdentifierExtension(ca.subjectKeyId);
  }

  /**
   * What native/issue.c needs to issue from a DER CSR exactly the certificate issue() would (native-issue.ts); the last
   * one is kept, as a batch shares its profile and window. Undefined when this CA's key is not held natively.
   */
  nativeTemplate(profile: CertificateProfile, validity: Validity, signerExtensions?: readonly Uint8Array[]): NativeTemplate | undefined {
    if (this.nativeKey === null) return undefined;
    const validityBytes = this.validityDer(validity);
    const last = this.lastTemplate;
    if (last !== undefined && last.profile === profile && last.extensions === signerExtensions && last.validity === validityBytes) return last.template;
    const bytes = packTemplate({
      hashBits: this.nativeKey.hashBits,
      includeSans: profile.includeSans,
      algorithmDer: this.scheme.algorithmDer,
      middle: [this.ca.subjectDer, validityBytes],
      head: this.extensionsFor(profile),
      tail: [this.authorityKeyId, ...(signerExtensions ?? [])],
      copy: (profile.copyExtensions ?? []).filter((oid) => !MANAGED_EXTENSIONS.has(oid)),
    });
    const template = bytes === undefined ? undefined : { key: this.nativeKey.handle, bytes };
    this.lastTemplate = { profile, extensions: signerExtensions, validity: validityBytes, template };
    return template;
  }

  /** Signs in the process: the fast path for a CA key held as a KeyObject. */
  issue(request: IssueRequest): IssuedCertificate {
    if (this.signer === undefined) throw new PlatformError("INTERNAL", "this CA's key is in a token: issue with issueAsync()");
    const { tbs, serial } = this.tbsFor(request);
    return this.finish(tbs, serial, request.validity, this.signer(tbs));
  }

  /** Signs through the CA's keySigner (a token) without blocking the event loop; in the process otherwise. */
  async issueAsync(request: IssueRequest): Promise<IssuedCertificate> {
    const keySigner = this.ca.keySigner;
    if (keySigner === undefined) return this.issue(request);
    const { tbs, serial } = this.tbsFor(request);
    return this.finish(tbs, serial, request.validity, await keySigner.sign(tbs));
  }

  private finish(tbs: Uint8Array, serial: Uint8Array, validity: Validity, signature: Uint8Array): IssuedCertificate {
    const der = assembleCertificate(tbs, this.scheme.algorithmDer, signature);
    return { der, pem: encodePem("CERTIFICATE", der), serialHex: hex(serial), notBefore: validity.notBefore, notAfter: validity.notAfter };
  }

  private tbsFor(request: IssueRequest): { tbs: Uint8Array; serial: Uint8Array } {
    const { csr, profile, validity } = request;
    const serial = randomSerial();
    const extensions = [...this.extensionsFor(profile)];
    extensions.push(subjectKeyIdentifierExtension(subjectKeyIdentifier(csr.publicKey.spki)), this.authorityKeyId);
    if (request.signerExtensions !== undefined) extensions.push(...request.signerExtensions);
    for (const ext of csr.extensions) {
      if (ext.oid === OID.subjectAltName) {
        // RFC 5280 §4.2.1.6: with an empty subject the SAN carries the identity and must be critical.
        if (profile.includeSans) extensions.push(extension(ext.oid, ext.critical || csr.subject.der.length === EMPTY_NAME_LENGTH, ext.value));
      } else if (profile.copyExtensions?.includes(ext.oid) && !MANAGED_EXTENSIONS.has(ext.oid)) {
        extensions.push(extension(ext.oid, ext.critical, ext.value));
      }
    }
    // TBSCertificate written into one buffer: the serial is always 16 content octets (randomSerial), so its
    // INTEGER header is constant; the extensions get their SEQUENCE and [3] headers here.
    let extLength = 0;
    for (const e of extensions) extLength += e.length;
    const extSeqLength = headerLength(extLength) + extLength;
    const validityBytes = this.validityDer(validity);
    const parts = [VERSION_V3, SERIAL_HEADER, serial, this.scheme.algorithmDer, this.ca.subjectDer, validityBytes, csr.subject.der, csr.publicKey.spki];
    let tbsLength = headerLength(extSeqLength) + extSeqLength;
    for (const p of parts) tbsLength += p.length;
    const tbs = allocBytes(headerLength(tbsLength) + tbsLength);
    let at = writeHeader(tbs, 0, Tag.SEQUENCE, tbsLength);
    for (const p of parts) {
      tbs.set(p, at);
      at += p.length;
    }
    at = writeHeader(tbs, at, EXTENSIONS_TAG, extSeqLength);
    at = writeHeader(tbs, at, Tag.SEQUENCE, extLength);
    for (const e of extensions) {
      tbs.set(e, at);
      at += e.length;
    }
    return { tbs, serial };
  }

  /** Validity DER, remembered for the last window: a burst signs many certificates within the same second. */
  private validityDer(validity: Validity): Uint8Array {
    const from = validity.notBefore.getTime();
    const to = validity.notAfter.getTime();
    const last = this.lastValidity;
    // DER holds whole seconds: two windows in the same seconds encode the same.
    if (last !== undefined && Math.floor(last.from / 1000) === Math.floor(from / 1000) && Math.floor(last.to / 1000) === Math.floor(to / 1000)) return last.der;
    const der = validityDer(validity);
    this.lastValidity = { from, to, der };
    return der;
  }

  /** BasicConstraints, KeyUsage and ExtKeyUsage of a profile, encoded once per distinct profile. */
  private extensionsFor(profile: CertificateProfile): readonly Uint8Array[] {
    // Callers reuse profile objects: look them up by identity before building the structural key.
    const known = this.profileObjects.get(profile);
    if (known !== undefined) return known;
    const exts = this.extensionsByShape(profile);
    this.profileObjects.set(profile, exts);
    return exts;
  }

  private extensionsByShape(profile: CertificateProfile): readonly Uint8Array[] {
    const { usages, isCa, pathLen } = profile;
    const key = `${isCa ? `ca:${pathLen ?? ""}` : "leaf"}|${usages.keyUsage}|${usages.extKeyUsage.join(",")}`;
    let exts = this.profileExtensions.get(key);
    if (exts === undefined) {
      const list = [keyUsageExtension(usages.keyUsage), extKeyUsageExtension(usages.extKeyUsage), basicConstraintsExtension(isCa, isCa ? pathLen : undefined)];
      exts = list.filter((e): e is Uint8Array => e !== undefined);
      if (this.profileExtensions.size >= PROFILE_CACHE_LIMIT) this.profileExtensions.clear();
      this.profileExtensions.set(key, exts);
    }
    return exts;
  }
}

const issuers = new WeakMap<CaKeyPair, Issuer>();

function issuerOf(ca: CaKeyPair): Issuer {
  if (ca === undefined || ca === null) throw new PlatformError("SIGNER_NOT_READY", "no CA key pair is loaded");
  let issuer = issuers.get(ca);
  if (issuer === undefined) {
    issuer = new Issuer(ca);
    issuers.set(ca, issuer);
  }
  return issuer;
}

/** One-call issuance; the Issuer of each CA is built on first use and kept while the CA object lives. */
export function issueCertificate(request: IssueRequest & { readonly ca: CaKeyPair }): IssuedCertificate {
  return issuerOf(request.ca).issue(request);
}

/**
 * A lone DER CSR read, checked and issued in one native call (native-issue.ts), when the accelerator can; a request
 * verified before in this process (parseCsr's memory) is read and issued there without the check.
 * Undefined when it did not issue: the caller takes the JavaScript path, which gives the request's error if any.
 */
export function issueDerNatively(request: Omit<IssueRequest, "csr"> & { readonly ca: CaKeyPair; readonly der: Uint8Array }): IssuedCertificate | undefined {
  const { ca, profile, validity, signerExtensions } = request;
  if (!nativeBatchAvailable() || ca.privateKey === undefined || request.der[0] !== Tag.SEQUENCE) return undefined;
  // Bytes another thread can write are copied first: what is verified must be what is copied into the certificate.
  const der = request.der.buffer instanceof SharedArrayBuffer ? request.der.slice() : request.der;
  let template: NativeTemplate | undefined;
  try {
    template = issuerOf(ca).nativeTemplate(profile, validity, signerExtensions);
  } catch {
    return undefined; // the JavaScript path reports it
  }
  if (template === undefined) return undefined;
  // A request this process verified before is read and issued without a second check of its self-signature.
  const memo = unverifiedKey(der);
  const issued = issueOneNative(template, der, memo === undefined);
  if (issued === undefined) return undefined;
  if (memo !== undefined) rememberVerified(memo);
  return { der: issued.der, pem: issued.pem, serialHex: issued.serialHex, notBefore: validity.notBefore, notAfter: validity.notAfter };
}

/** issueCertificate for a CA whose key may be in a token (CaKeyPair.keySigner). */
export function issueCertificateAsync(request: IssueRequest & { readonly ca: CaKeyPair }): Promise<IssuedCertificate> {
  return issuerOf(request.ca).issueAsync(request);
}

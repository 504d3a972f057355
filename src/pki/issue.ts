// The issuance fast path: a certificate from a parsed CSR, a profile and a validity, signed by one CA.
//
// The DER is assembled by hand (see der-writer.ts for why): everything constant for a CA (version, signature
// algorithm, issuer Name, AuthorityKeyIdentifier) is encoded once in the constructor, the extensions of a profile
// once per distinct profile, and per certificate only the serial, validity, subject, key and SKI are added.
import { PlatformError } from "../errors.js";
import { integer, sequence, explicit } from "./der-writer.js";
import { subjectKeyIdentifier } from "./keys.js";
import { OID } from "./oids.js";
import { encodePem } from "./pem.js";
import {
  authorityKeyIdentifierExtension,
  basicConstraintsExtension,
  extension,
  extKeyUsageExtension,
  hex,
  keyUsageExtension,
  randomSerial,
  signatureScheme,
  signCertificate,
  subjectKeyIdentifierExtension,
  validityDer,
  VERSION_V3,
  type SignatureScheme,
} from "./tbs-template.js";
import type { CaKeyPair, CertificateProfile, ParsedCsr, Validity } from "./types.js";

export interface IssueRequest {
  readonly csr: ParsedCsr;
  readonly profile: CertificateProfile;
  readonly validity: Validity;
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
]);

const EMPTY_NAME_LENGTH = 2; // SEQUENCE {} — 30 00
const PROFILE_CACHE_LIMIT = 256;

/** Issues certificates for one CA; build it once per CA (it precomputes the constant parts) and reuse it. */
export class Issuer {
  readonly ca: CaKeyPair;
  private readonly scheme: SignatureScheme;
  private readonly authorityKeyId: Uint8Array;
  private readonly profileExtensions = new Map<string, readonly Uint8Array[]>();

  constructor(ca: CaKeyPair) {
    this.ca = ca;
    this.scheme = signatureScheme(ca.keyAlgorithm, ca.curve);
    this.authorityKeyId = authorityKeyIdentifierExtension(ca.subjectKeyId);
  }

  issue(request: IssueRequest): IssuedCertificate {
    const { csr, profile, validity } = request;
    const serial = randomSerial();
    const extensions = [...this.extensionsFor(profile)];
    extensions.push(subjectKeyIdentifierExtension(subjectKeyIdentifier(csr.publicKey.spki)), this.authorityKeyId);
    for (const ext of csr.extensions) {
      if (ext.oid === OID.subjectAltName) {
        // RFC 5280 §4.2.1.6: with an empty subject the SAN carries the identity and must be critical.
        if (profile.includeSans) extensions.push(extension(ext.oid, ext.critical || csr.subject.der.length === EMPTY_NAME_LENGTH, ext.value));
      } else if (profile.copyExtensions?.includes(ext.oid) && !MANAGED_EXTENSIONS.has(ext.oid)) {
        extensions.push(extension(ext.oid, ext.critical, ext.value));
      }
    }
    const der = signCertificate(
      [
        VERSION_V3,
        integer(serial),
        this.scheme.algorithmDer,
        this.ca.subjectDer,
        validityDer(validity),
        csr.subject.der,
        csr.publicKey.spki,
        explicit(3, sequence(...extensions)),
      ],
      this.scheme,
      this.ca.privateKey,
    );
    return { der, pem: encodePem("CERTIFICATE", der), serialHex: hex(serial), notBefore: validity.notBefore, notAfter: validity.notAfter };
  }

  /** BasicConstraints, KeyUsage and ExtKeyUsage of a profile, encoded once per distinct profile. */
  private extensionsFor(profile: CertificateProfile): readonly Uint8Array[] {
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

/** One-call issuance; the Issuer of each CA is built on first use and kept while the CA object lives. */
export function issueCertificate(request: IssueRequest & { readonly ca: CaKeyPair }): IssuedCertificate {
  if (request.ca === undefined || request.ca === null) throw new PlatformError("SIGNER_NOT_READY", "no CA key pair is loaded");
  let issuer = issuers.get(request.ca);
  if (issuer === undefined) {
    issuer = new Issuer(request.ca);
    issuers.set(request.ca, issuer);
  }
  return issuer.issue(request);
}

// A CRL (RFC 5280 §5, v2) written with the product's DER writer: issuer, thisUpdate/nextUpdate, CRL number,
// AuthorityKeyIdentifier and one entry per revoked serial with its reason code, signed by the CA's sign function.
import { PlatformError } from "../errors.js";
import { REVOCATION_REASON_CODES, type RevocationReason } from "../api/revocation.js";
import { assembleCertificate, concat, explicit, integer, sequence, time, tlv } from "./der-writer.js";
import { encodePem } from "./pem.js";
import { OID } from "./oids.js";
import { authorityKeyIdentifierExtension, caSignFunction, extension, signatureScheme, type SignatureScheme } from "./tbs-template.js";
import type { CaKeyPair } from "./types.js";

export interface CrlEntry {
  /** The serial's magnitude (big-endian), or its DER INTEGER contents. */
  readonly serial: Uint8Array;
  readonly revocationDate: Date;
  readonly reason: RevocationReason;
}

/** The CA side of a CRL: who signs it and how (the issuer's sign function, which may be asynchronous). */
export interface CrlIssuer {
  readonly subjectDer: Uint8Array;
  readonly subjectKeyId: Uint8Array;
  readonly scheme: SignatureScheme;
  sign(tbs: Uint8Array): Uint8Array | Promise<Uint8Array>;
}

export interface CrlContents {
  readonly thisUpdate: Date;
  readonly nextUpdate: Date;
  /** Monotonic per issuer (RFC 5280 §5.2.3). */
  readonly crlNumber: number | bigint;
  readonly entries: readonly CrlEntry[];
}

export interface Crl {
  readonly der: Uint8Array;
  readonly pem: string;
}

const ENUMERATED = 0x0a;
const V2 = integer(1);

/** A CrlIssuer signing with the key the Issuer signs certificates with: in the process, or in a PKCS#11 token. */
export function crlIssuerFromCa(ca: CaKeyPair): CrlIssuer {
  const scheme = signatureScheme(ca.keyAlgorithm, ca.curve);
  const named = { subjectDer: ca.subjectDer, subjectKeyId: ca.subjectKeyId };
  if (ca.privateKey) return { ...named, scheme, sign: caSignFunction(scheme, ca.privateKey) };
  const token = ca.keySigner;
  if (!token) throw new PlatformError("CA_INVALID", "the CA has neither a private key nor a key signer to sign its CRL with");
  // A token key may sign with other parameters than the key type's default (RSA-PSS): its own AlgorithmIdentifier.
  return { ...named, scheme: { ...scheme, algorithmDer: token.algorithmDer }, sign: (tbs) => token.sign(tbs) };
}

export async function buildCrl(issuer: CrlIssuer, contents: CrlContents): Promise<Crl> {
  const entries = contents.entries.map((e) => {
    const code = REVOCATION_REASON_CODES[e.reason];
    // RFC 5280 §5.3.1: the reason code extension is omitted rather than given as unspecified.
    const extensions = code === 0 ? [] : [sequence(extension(OID.cRLReasonCode, false, tlv(ENUMERATED, Uint8Array.of(code))))];
    return sequence(integer(e.serial), time(e.revocationDate), ...extensions);
  });
  const crlExtensions = explicit(
    0,
    sequence(authorityKeyIdentifierExtension(issuer.subjectKeyId), extension(OID.cRLNumber, false, integer(contents.crlNumber))),
  );
  const tbs = sequence(
    V2,
    issuer.scheme.algorithmDer,
    issuer.subjectDer,
    time(contents.thisUpdate),
    time(contents.nextUpdate),
    // An empty revokedCertificates is left out (RFC 5280 §5.1.2.6).
    ...(entries.length > 0 ? [sequence(...entries)] : []),
    crlExtensions,
  );
  const der = concat([assembleCertificate(tbs, issuer.scheme.algorithmDer, await issuer.sign(tbs))]);
  return { der, pem: encodePem("X509 CRL", der) };
}

// Shared PKI data shapes: what a parsed CSR exposes, what issuance needs, what a CA key pair holds.
import type { KeyObject } from "node:crypto";

export type KeyAlgorithm = "rsa" | "ecdsa" | "ed25519";
export type NamedCurve = "P-256" | "P-384" | "P-521";

/** A public key as found in a CSR or certificate. */
export interface PublicKeyInfo {
  readonly algorithm: KeyAlgorithm;
  /** RSA modulus bits; curve size for ECDSA (256/384/521); 256 for Ed25519. */
  readonly bits: number;
  readonly curve?: NamedCurve;
  /** DER SubjectPublicKeyInfo, copied verbatim into the issued certificate. */
  readonly spki: Uint8Array;
}

/** One attribute of a relative distinguished name. */
export interface NameAttribute {
  /** Dotted OID, e.g. 2.5.4.3. */
  readonly oid: string;
  /** Short name when known: CN, O, OU, C, ST, L, STREET, SERIALNUMBER, DC, UID, E... */
  readonly shortName?: string;
  readonly value: string;
}

/** A distinguished name: ordered RDNs, each a set of attributes. */
export interface DistinguishedName {
  /** DER of the Name, copied verbatim into the issued certificate's subject. */
  readonly der: Uint8Array;
  readonly rdns: readonly (readonly NameAttribute[])[];
  /** RFC 4514 string (most specific RDN first), e.g. `CN=system:node:a,O=system:nodes`. */
  readonly text: string;
  readonly commonName?: string;
  readonly organizations: readonly string[];
  readonly organizationalUnits: readonly string[];
}

export interface SubjectAltNames {
  readonly dns: readonly string[];
  /** Textual addresses: dotted IPv4 or RFC 5952 IPv6. */
  readonly ip: readonly string[];
  readonly email: readonly string[];
  readonly uri: readonly string[];
  /** GeneralName choices other than the four above (otherName, directoryName, registeredID...), by tag number. */
  readonly other: readonly number[];
}

export interface Extension {
  readonly oid: string;
  readonly critical: boolean;
  /** DER of the extnValue contents (the inner value, not the OCTET STRING wrapper). */
  readonly value: Uint8Array;
}

/** A parsed and signature-checked PKCS#10 certificate signing request. */
export interface ParsedCsr {
  readonly der: Uint8Array;
  readonly subject: DistinguishedName;
  readonly sans: SubjectAltNames;
  /** Extensions requested through the extensionRequest attribute (SAN included). */
  readonly extensions: readonly Extension[];
  readonly publicKey: PublicKeyInfo;
  /** Dotted OID of the CSR's signature algorithm. */
  readonly signatureAlgorithm: string;
}

/** Extended key usage OIDs and KeyUsage bits wanted in a certificate. */
export interface UsageSet {
  /** KeyUsage bits as in RFC 5280 (digitalSignature = bit 0 ... decipherOnly = bit 8); see pki/usages.ts. */
  readonly keyUsage: number;
  /** ExtendedKeyUsage OIDs in request order, no duplicates. */
  readonly extKeyUsage: readonly string[];
}

/** What goes into one certificate beyond the CSR: decided by a signer from its policy. */
export interface CertificateProfile {
  readonly usages: UsageSet;
  readonly isCa: boolean;
  /** pathLenConstraint when isCa; undefined for none. */
  readonly pathLen?: number;
  /** Copy the CSR's SANs into the certificate. */
  readonly includeSans: boolean;
  /** Requested extensions (by OID) permitted to be copied verbatim; everything else is dropped. */
  readonly copyExtensions?: readonly string[];
}

/** Validity window computed from the request, the cluster maximum and the CA. */
export interface Validity {
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** A CA key that signs outside the process: asynchronous, so a token round trip does not block the event loop. */
export interface CaKeySigner {
  /** AlgorithmIdentifier DER written into what it signs (e.g. RSASSA-PSS with its parameters). */
  readonly algorithmDer: Uint8Array;
  /** The signature value over `data`, as a certificate's BIT STRING carries it (ECDSA in DER). */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

/** A loaded CA: its certificate and the private key to sign with, imported once and reused. */
export interface CaKeyPair {
  readonly certDer: Uint8Array;
  readonly certPem: string;
  /** DER of the CA's subject Name: the issuer Name of every certificate it signs. */
  readonly subjectDer: Uint8Array;
  readonly subjectKeyId: Uint8Array;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The key signing in the process; absent when the key stays in a token and `keySigner` signs. */
  readonly privateKey?: KeyObject;
  readonly publicKey: KeyObject;
  /** Signs outside the process (a PKCS#11 token); set exactly when `privateKey` is not. */
  readonly keySigner?: CaKeySigner;
  readonly keyAlgorithm: KeyAlgorithm;
  readonly curve?: NamedCurve;
  /** Intermediate certificates (PEM) presented after the leaf, if this CA is not a root. */
  readonly chainPem: readonly string[];
}

/** A CA whose key is in the process (files, PEM, generated). */
export interface FileCaKeyPair extends CaKeyPair {
  readonly privateKey: KeyObject;
}

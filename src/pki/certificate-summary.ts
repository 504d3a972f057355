// What a person wants to know about a certificate (names, issuer, validity, key, usages, CA flag) and whether a chain reaches a bundle.
import { createHash, createPublicKey, X509Certificate } from "node:crypto";
import { PlatformError } from "../errors.js";
import { maskOf, readCertificateFacts } from "./ca.js";
import { DerReader, Tag } from "./der.js";
import { readGeneralNames, readName } from "./names.js";
import { describeKey } from "./keys.js";
import { describeOid, OID } from "./oids.js";
import { decodePem } from "./pem.js";
import { KeyUsageBit, KNOWN_USAGES, resolveUsages, type KeyUsageName } from "./usages.js";

export interface CertificateSummary {
  /** RFC 4514 text, most specific RDN first (`CN=system:node:n1,O=system:nodes`). */
  readonly subject: string;
  readonly issuer: string;
  /** Lower-case hex, colon-separated, as openssl prints long serials. */
  readonly serialNumber: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** `ECDSA P-256`, `RSA 2048`, `Ed25519`... */
  readonly publicKey: { readonly algorithm: string; readonly bits?: number; readonly curve?: string };
  readonly signatureAlgorithm: string;
  readonly subjectAltNames: { readonly dns: readonly string[]; readonly ip: readonly string[]; readonly email: readonly string[]; readonly uri: readonly string[] };
  /** RFC 5280 names of the KeyUsage bits set (`digitalSignature`, `keyCertSign`...); empty without the extension. */
  readonly keyUsages: readonly string[];
  /** Seed usage names where one exists (`client auth`), else the dotted OID. */
  readonly extendedKeyUsages: readonly string[];
  readonly isCa: boolean;
  readonly pathLen?: number;
  readonly selfSigned: boolean;
  /** SHA-256 of the DER, upper-case colon-separated hex (openssl x509 -fingerprint -sha256). */
  readonly sha256Fingerprint: string;
}

/** Seed usage name of each ExtendedKeyUsage OID (the first name of an OID that has two, like s/mime). */
const EKU_NAMES: ReadonlyMap<string, string> = new Map(
  KNOWN_USAGES.flatMap((u) => resolveUsages([u]).extKeyUsage.map((oid) => [oid, u] as [string, string])).reverse(),
);

const colonHex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex").replace(/(..)(?!$)/g, "$1:");

const ALGORITHM_LABELS = { rsa: "RSA", ecdsa: "ECDSA", ed25519: "Ed25519" } as const;

function keyOf(spki: Uint8Array): CertificateSummary["publicKey"] {
  let key;
  try {
    key = createPublicKey({ key: Buffer.from(spki), format: "der", type: "spki" });
  } catch {
    return { algorithm: "unknown" };
  }
  try {
    const d = describeKey(key);
    return { algorithm: ALGORITHM_LABELS[d.algorithm], ...(d.curve && { curve: d.curve }), bits: d.bits };
  } catch {
    // A key the CA would not sign with (RSA 1024, another curve) is still shown for what it is.
    const d = key.asymmetricKeyDetails ?? {};
    return { algorithm: key.asymmetricKeyType ?? "unknown", ...(d.namedCurve && { curve: d.namedCurve }), ...(d.modulusLength && { bits: d.modulusLength }) };
  }
}

/** Reads a DER certificate with the strict reader; CERT_INVALID when it is not one. */
export function summarizeCertificate(der: Uint8Array): CertificateSummary {
  let facts;
  try {
    facts = readCertificateFacts(der);
  } catch (err) {
    throw new PlatformError("CERT_INVALID", `not a valid X.509 certificate: ${(err as Error).message}`, { cause: err });
  }
  const subject = readName(new DerReader(facts.subjectDer), "subject");
  const issuer = readName(new DerReader(facts.issuerDer), "issuer");
  let sans = { dns: [] as readonly string[], ip: [] as readonly string[], email: [] as readonly string[], uri: [] as readonly string[] };
  const extendedKeyUsages: string[] = [];
  let pathLen: number | undefined;
  for (const ext of facts.extensions) {
    const r = new DerReader(ext.value);
    if (ext.oid === OID.subjectAltName) {
      const { dns, ip, email, uri } = readGeneralNames(r);
      sans = { dns, ip, email, uri };
    } else if (ext.oid === OID.extKeyUsage) {
      const list = r.sequence("extKeyUsage");
      while (list.hasMore()) {
        const oid = list.oid("extKeyUsage purpose");
        extendedKeyUsages.push(EKU_NAMES.get(oid) ?? oid);
      }
    } else if (ext.oid === OID.basicConstraints) {
      const bc = r.sequence("basicConstraints");
      if (bc.peekTag() === Tag.BOOLEAN) bc.boolean("cA");
      if (bc.peekTag() === Tag.INTEGER) pathLen = bc.smallInteger("pathLenConstraint");
    }
  }
  const keyUsages = facts.keyUsage === undefined ? [] : (Object.keys(KeyUsageBit) as KeyUsageName[]).filter((n) => (facts.keyUsage! & (1 << KeyUsageBit[n])) !== 0);
  return {
    subject: subject.text,
    issuer: issuer.text,
    serialNumber: colonHex(facts.serialNumber[0] === 0 && facts.serialNumber.length > 1 ? facts.serialNumber.subarray(1) : facts.serialNumber),
    notBefore: facts.notBefore,
    notAfter: facts.notAfter,
    publicKey: keyOf(facts.spki),
    signatureAlgorithm: describeOid(facts.signatureAlgorithm).replace(/ \(.*\)$/, ""),
    subjectAltNames: sans,
    keyUsages,
    extendedKeyUsages,
    isCa: facts.isCa,
    ...(pathLen !== undefined && { pathLen }),
    selfSigned: Buffer.from(facts.subjectDer).equals(Buffer.from(facts.issuerDer)),
    sha256Fingerprint: colonHex(createHash("sha256").update(der).digest()).toUpperCase(),
  };
}

/** The DER certificates of a PEM text, in order; CERT_INVALID when there are none. */
export function certificatesOf(pem: string, where: string): Uint8Array[] {
  let blocks;
  try {
    blocks = decodePem(pem, { label: "CERTIFICATE" });
  } catch (err) {
    throw new PlatformError("CERT_INVALID", `${where}: ${(err as Error).message}`, { cause: err });
  }
  if (blocks.length === 0) throw new PlatformError("CERT_INVALID", `${where} holds no certificate`);
  return blocks.map((b) => b.der);
}

export type ChainVerdict = { readonly verified: true; readonly anchor: string } | { readonly verified: false; readonly reason: string };

const parse = (der: Uint8Array) => ({ cert: new X509Certificate(Buffer.from(der)), facts: readCertificateFacts(der) });
type Parsed = ReturnType<typeof parse>;

function issued(issuer: Parsed, subject: Parsed): boolean {
  try {
    return subject.cert.checkIssued(issuer.cert) && subject.cert.verify(issuer.cert.publicKey);
  } catch {
    return false;
  }
}

function outsideValidity(p: Parsed, now: Date): string | undefined {
  const name = readName(new DerReader(p.facts.subjectDer)).text;
  if (now < p.facts.notBefore) return `${name} is not valid before ${p.facts.notBefore.toISOString()}`;
  if (now > p.facts.notAfter) return `${name} expired at ${p.facts.notAfter.toISOString()}`;
  return undefined;
}

/**
 * Whether `chain` (leaf first, then intermediates) leads to one of `anchors` by signatures, with every certificate
 * on the path inside its validity window at `now`: what `openssl verify -CAfile bundle -untrusted rest leaf` decides.
 */
export function verifyChain(chain: readonly Uint8Array[], anchors: readonly Uint8Array[], now = new Date()): ChainVerdict {
  let certs: Parsed[];
  let roots: Parsed[];
  try {
    certs = chain.map(parse);
    roots = anchors.map(parse);
  } catch (err) {
    return { verified: false, reason: `a certificate cannot be read: ${(err as Error).message}` };
  }
  if (roots.length === 0) return { verified: false, reason: "the trust bundle holds no certificate" };
  const unused = certs.slice(1);
  let current = certs[0]!;
  for (let depth = 0; depth <= certs.length; depth++) {
    const expired = outsideValidity(current, now);
    if (expired) return { verified: false, reason: expired };
    const anchor = roots.find((a) => issued(a, current));
    if (anchor) {
      const anchorExpired = outsideValidity(anchor, now);
      return anchorExpired ? { verified: false, reason: anchorExpired } : { verified: true, anchor: readName(new DerReader(anchor.facts.subjectDer)).text };
    }
    const i = unused.findIndex((c) => c.facts.isCa && issued(c, current));
    if (i < 0) break;
    current = unused.splice(i, 1)[0]!;
  }
  return { verified: false, reason: "no certificate of the trust bundle signed it (unknown authority)" };
}

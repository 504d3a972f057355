// CA material: a certificate + private key pair checked and prepared for signing, from PEM, files, or generated.
import { createPublicKey } from "node:crypto";
import { readFile } from "node:fs/promises";
import { invalidOption, isPlatformError, PlatformError } from "../errors.js";
import { DerReader, Tag, contextTag } from "./der.js";
import { readName } from "./names.js";
import { explicit, integer, objectIdentifier, sequence, setOf, utf8String } from "./der-writer.js";
import { describeKey, generateKeyPair, KEY_TYPES, loadPrivateKey, privateKeyMatchesCertificate, subjectKeyIdentifier, type KeyDescription, type KeyType } from "./keys.js";
import { KeyUsageBit, keyUsageMask } from "./usages.js";
import { OID } from "./oids.js";
import { decodePem, encodePem } from "./pem.js";
import {
  basicConstraintsExtension,
  keyUsageExtension,
  randomSerial,
  signatureScheme,
  signCertificate,
  subjectKeyIdentifierExtension,
  validityDer,
  VERSION_V3,
} from "./tbs-template.js";
import type { CaKeyPair, CaKeySigner, Extension, FileCaKeyPair } from "./types.js";
import { BACKDATE_SECONDS } from "./validity.js";
import { unwrapKeyText } from "./wrapped-key.js";

export interface CaFromPemOptions {
  /** Accept certificates after the first in the certificate text as intermediates (CaKeyPair.chainPem). */
  readonly intermediates?: boolean;
  /** How the two inputs are named in messages (file paths when loaded from files). */
  readonly certName?: string;
  readonly keyName?: string;
}

/** The parts of a certificate the CA needs, read with the strict DER reader. */
export interface CertificateFacts {
  readonly subjectDer: Uint8Array;
  readonly spki: Uint8Array;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isCa: boolean;
  /** Whether the certificate has a BasicConstraints extension at all. */
  readonly basicConstraints: boolean;
  readonly subjectKeyId?: Uint8Array;
  /** KeyUsage mask (bit i = 1 << i) when the extension is present. */
  readonly keyUsage?: number;
  /** Views into the input, for readers that want more than the CA needs (certificate-summary.ts). */
  readonly serialNumber: Uint8Array;
  readonly issuerDer: Uint8Array;
  /** Dotted OID of the outer signatureAlgorithm. */
  readonly signatureAlgorithm: string;
  readonly extensions: readonly Extension[];
}

/**
 * Reads subject, key, validity, BasicConstraints, SKI and KeyUsage from a DER certificate, checking the whole
 * structure on the way (names, key info, every extension, signature): what does not read is not a certificate.
 */
export function readCertificateFacts(der: Uint8Array): CertificateFacts {
  const top = new DerReader(der);
  const cert = top.sequence("Certificate");
  top.finish("Certificate");
  const tbs = cert.sequence("TBSCertificate");
  tbs.optional(contextTag(0, true), "version");
  const serialNumber = tbs.contents(tbs.next(Tag.INTEGER, "serialNumber"));
  tbs.next(Tag.SEQUENCE, "signature");
  const issuerDer = readName(tbs, "issuer").der;
  const validity = tbs.sequence("validity");
  const notBefore = validity.time("notBefore");
  const notAfter = validity.time("notAfter");
  validity.finish("validity");
  const subjectDer = readName(tbs, "subject").der;
  const spkiTlv = tbs.next(Tag.SEQUENCE, "subjectPublicKeyInfo");
  const spki = tbs.bytes(spkiTlv);
  const key = tbs.child(spkiTlv);
  key.next(Tag.SEQUENCE, "subjectPublicKeyInfo algorithm");
  key.bitString("subjectPublicKey");
  key.finish("subjectPublicKeyInfo");
  tbs.optional(contextTag(1, false), "issuerUniqueID");
  tbs.optional(contextTag(2, false), "subjectUniqueID");
  const extsTlv = tbs.optional(contextTag(3, true), "extensions");
  tbs.finish("TBSCertificate");
  const signatureAlgorithm = cert.sequence("signatureAlgorithm").oid("signatureAlgorithm algorithm");
  cert.bitString("signatureValue");
  cert.finish("Certificate");
  let isCa = false;
  let basicConstraints = false;
  let subjectKeyId: Uint8Array | undefined;
  let keyUsage: number | undefined;
  const extensions: Extension[] = [];
  const list = extsTlv === undefined ? undefined : tbs.child(extsTlv).sequence("extensions");
  while (list?.hasMore()) {
    const ext = list.sequence("extension");
    const oid = ext.oid("extension id");
    const critical = ext.peekTag() === Tag.BOOLEAN && ext.boolean("critical");
    const bytes = ext.octetString("extension value");
    extensions.push({ oid, critical, value: bytes });
    const value = ext.viewReader(bytes);
    if (oid === OID.basicConstraints) {
      basicConstraints = true;
      const bc = value.sequence("basicConstraints");
      isCa = bc.peekTag() === Tag.BOOLEAN && bc.boolean("cA");
    } else if (oid === OID.subjectKeyIdentifier) {
      subjectKeyId = value.octetString("subjectKeyIdentifier");
    } else if (oid === OID.keyUsage) {
      keyUsage = maskOf(value.bitString("keyUsage").bytes);
    }
  }
  return {
    subjectDer, spki, notBefore, notAfter, isCa, basicConstraints, serialNumber, issuerDer, signatureAlgorithm, extensions,
    ...(subjectKeyId && { subjectKeyId }),
    ...(keyUsage !== undefined && { keyUsage }),
  };
}

/** KeyUsage bits of a BIT STRING's bytes as a mask (bit i = 1 << i). */
export function maskOf(bytes: Uint8Array): number {
  let mask = 0;
  for (let i = 0; i < Math.min(bytes.length * 8, 16); i++) if (bytes[i >> 3]! & (0x80 >> (i & 7))) mask |= 1 << i;
  return mask;
}

/** Builds a CaKeyPair: one CA certificate (plus intermediates when allowed), a matching key, CA=true. */
export function caFromPem(certPem: string, keyPem: string, options: CaFromPemOptions = {}): FileCaKeyPair {
  const keyName = options.keyName ?? "CA private key";
  const { certName, certDer, facts, chainPem } = caCertificate(certPem, options);
  const privateKey = withName(keyName, () => loadPrivateKey(keyPem));
  const key = describeKey(privateKey);
  if (!withName(certName, () => privateKeyMatchesCertificate(privateKey, certDer), "CERT_INVALID")) {
    throw new PlatformError("KEY_MISMATCH", `${keyName} does not belong to ${certName}`);
  }
  return { ...caKeyPair(certDer, facts, chainPem, key, { publicKey: createPublicKey(privateKey) }), privateKey };
}

/**
 * A CaKeyPair whose key stays outside the process (a PKCS#11 token): `keySigner` signs, and the caller has checked
 * that it belongs to the certificate (src/pki/pkcs11-ca.ts signs a probe and verifies it).
 */
export function caFromPemWithSigner(certPem: string, keySigner: CaKeySigner, options: CaFromPemOptions = {}): CaKeyPair {
  const { certName, certDer, facts, chainPem } = caCertificate(certPem, options);
  const publicKey = withName(certName, () => createPublicKey({ key: Buffer.from(facts.spki), format: "der", type: "spki" }), "CERT_INVALID");
  return caKeyPair(certDer, facts, chainPem, describeKey(publicKey), { publicKey, keySigner });
}

/** The CA certificate (and intermediates when allowed), checked to be a CA that may sign certificates. */
function caCertificate(certPem: string, options: CaFromPemOptions): { certName: string; certDer: Uint8Array; facts: CertificateFacts; chainPem: string[] } {
  const certName = options.certName ?? "CA certificate";
  const blocks = withName(certName, () => decodePem(certPem, { label: "CERTIFICATE" }));
  if (blocks.length > 1 && options.intermediates !== true) {
    throw new PlatformError(
      "CERT_INVALID",
      `${certName}: expected exactly one certificate, found ${blocks.length}; intermediates after the CA certificate need the intermediates option`,
    );
  }
  const headers = blocks.find((b) => b.hasHeaders);
  if (headers) throw new PlatformError("PEM_HEADERS", `${certName}: certificate ${headers.index + 1} carries PEM headers`);
  const [leaf, ...chain] = blocks.map((b) => ({ der: b.der, facts: withName(certName, () => readCertificateFacts(b.der), "CERT_INVALID") }));
  const { der: certDer, facts } = leaf!;
  if (!facts.isCa) throw new PlatformError("CA_NOT_A_CA", `${certName}: certificate lacks BasicConstraints CA=true`);
  if (facts.keyUsage !== undefined && (facts.keyUsage & keyUsageMask("keyCertSign")) === 0) {
    throw new PlatformError("CA_NOT_A_CA", `${certName}: certificate KeyUsage lacks keyCertSign (bit ${KeyUsageBit.keyCertSign})`);
  }
  return { certName, certDer, facts, chainPem: chain.map((c) => encodePem("CERTIFICATE", c.der)) };
}

function caKeyPair(
  certDer: Uint8Array,
  facts: CertificateFacts,
  chainPem: readonly string[],
  key: KeyDescription,
  keys: Pick<CaKeyPair, "privateKey" | "publicKey" | "keySigner">,
): CaKeyPair {
  return {
    certDer,
    certPem: encodePem("CERTIFICATE", certDer),
    subjectDer: facts.subjectDer,
    subjectKeyId: facts.subjectKeyId ?? subjectKeyIdentifier(facts.spki),
    notBefore: facts.notBefore,
    notAfter: facts.notAfter,
    ...keys,
    keyAlgorithm: key.algorithm,
    ...(key.curve && { curve: key.curve }),
    chainPem,
  };
}

/** Prefixes errors with the input's name; errors of other codes than PlatformErrors become `fallback`. */
function withName<T>(name: string, fn: () => T, fallback: "CERT_INVALID" | "CA_INVALID" = "CA_INVALID"): T {
  try {
    return fn();
  } catch (err) {
    const code = isPlatformError(err) && err.code !== "DER_INVALID" ? err.code : fallback;
    throw new PlatformError(code, `${name}: ${(err as Error).message}`, { cause: err });
  }
}

export interface CaFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly intermediates?: boolean;
}

/** Reads and checks a CA certificate file and key file (CSRSigningConfiguration CertFile/KeyFile). */
export async function loadCaFiles(files: CaFiles): Promise<FileCaKeyPair> {
  const [cert, key] = await Promise.all([readCaFile(files.certFile, "certificate"), readCaFile(files.keyFile, "key")]);
  return caFromPem(cert, await unwrapKeyText(key, files.keyFile), { intermediates: files.intermediates === true, certName: files.certFile, keyName: files.keyFile });
}

async function readCaFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "latin1");
  } catch (err) {
    throw new PlatformError("CA_INVALID", `cannot read CA ${what} file ${path}: ${(err as Error).message}`, { cause: err });
  }
}

export interface GenerateCaOptions {
  readonly commonName: string;
  readonly keyType: KeyType;
  readonly lifetimeSeconds: number;
  readonly now: Date;
}

export interface GeneratedCa {
  readonly certPem: string;
  /** PKCS#8 PEM; write it with writePrivateKeyFile. */
  readonly keyPem: string;
  readonly ca: FileCaKeyPair;
}

const CA_KEY_USAGE = keyUsageMask("keyCertSign") | keyUsageMask("cRLSign") | keyUsageMask("digitalSignature");

/**
 * The TBSCertificate parts of a self-signed CA: CN only, KeyUsage and BasicConstraints critical, SKI, backdated by
 * 5 minutes. Shared by generateCa and CAs whose key is generated in a token.
 */
export function selfSignedCaParts(o: { commonName: string; spki: Uint8Array; lifetimeSeconds: number; now: Date; algorithmDer: Uint8Array }): Uint8Array[] {
  const name = sequence(setOf(sequence(objectIdentifier(OID.commonName), utf8String(o.commonName))));
  const start = Math.floor(o.now.getTime() / 1000) * 1000;
  const validity = { notBefore: new Date(start - BACKDATE_SECONDS * 1000), notAfter: new Date(start + o.lifetimeSeconds * 1000) };
  const extensions = [keyUsageExtension(CA_KEY_USAGE)!, basicConstraintsExtension(true), subjectKeyIdentifierExtension(subjectKeyIdentifier(o.spki))];
  return [VERSION_V3, integer(randomSerial()), o.algorithmDer, name, validityDer(validity), name, o.spki, explicit(3, sequence(...extensions))];
}

/** A self-signed development CA: KeyUsage and BasicConstraints critical, SKI, backdated by 5 minutes. */
export async function generateCa(options: GenerateCaOptions): Promise<GeneratedCa> {
  const { commonName, keyType, lifetimeSeconds, now } = options;
  if (typeof commonName !== "string" || commonName.length === 0 || commonName.length > 64) {
    throw invalidOption("commonName", "to be 1–64 characters", commonName);
  }
  if (!KEY_TYPES.includes(keyType)) throw invalidOption("keyType", `to be one of ${KEY_TYPES.join(", ")}`, keyType);
  if (!Number.isSafeInteger(lifetimeSeconds) || lifetimeSeconds < 3600) throw invalidOption("lifetimeSeconds", "to be an integer ≥ 3600", lifetimeSeconds);
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) throw invalidOption("now", "to be a valid Date", String(now));

  const keys = await generateKeyPair(keyType);
  const key = describeKey(keys.privateKey);
  const spki = new Uint8Array(keys.publicKey.export({ type: "spki", format: "der" }));
  const scheme = signatureScheme(key.algorithm, key.curve);
  const tbsParts = selfSignedCaParts({ commonName, spki, lifetimeSeconds, now, algorithmDer: scheme.algorithmDer });
  const der = signCertificate(tbsParts, scheme, keys.privateKey);
  const certPem = encodePem("CERTIFICATE", der);
  return { certPem, keyPem: keys.privateKeyPem, ca: caFromPem(certPem, keys.privateKeyPem) };
}

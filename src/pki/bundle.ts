// PEM rules for ClusterTrustBundle spec.trustBundle and CSR status.certificate, and the canonical bundle form.
import { Buffer } from "node:buffer";
import { isPlatformError, PlatformError, type ErrorCause } from "../errors.js";
import { readCertificateFacts, type CertificateFacts } from "./ca.js";
import { decodePem, describeBlock, encodePem, type PemBlock } from "./pem.js";

export interface BundleResult {
  /** One PEM block per certificate, in input order, re-encoded without headers or surrounding text. */
  readonly certificates: string[];
  /** What the strict reader found in each certificate, in the same order. */
  readonly facts: CertificateFacts[];
}

export interface BundleOptions {
  /** Field path named in causes (default `spec.trustBundle` / `status.certificate`). */
  readonly field?: string;
}

const CERTIFICATE = "CERTIFICATE";

type Rule = (block: PemBlock, cert: CertificateFacts) => string | undefined;

/** Checks spec.trustBundle: CERTIFICATE blocks only, each a CA certificate, no duplicates, no headers, at least one. */
export function validateTrustBundle(pem: string, opts: BundleOptions = {}): BundleResult {
  return validate(pem, opts.field ?? "spec.trustBundle", "trust bundle", requireCa, true);
}

/** Checks status.certificate: one or more CERTIFICATE blocks without headers, each a parseable certificate. */
export function validateIssuedCertificate(pem: string, opts: BundleOptions = {}): BundleResult {
  return validate(pem, opts.field ?? "status.certificate", "certificate chain", () => undefined, false);
}

function requireCa(_block: PemBlock, cert: CertificateFacts): string | undefined {
  if (!cert.basicConstraints) return "certificate has no BasicConstraints extension (a trust anchor must be a CA)";
  if (!cert.isCa) return "certificate's BasicConstraints does not set CA=true";
  return undefined;
}

function validate(pem: string, field: string, what: string, rule: Rule, refuseDuplicates: boolean): BundleResult {
  if (typeof pem !== "string") throw bundleError(field, what, [invalid(`${field} must be PEM text`)]);
  if (!pem.includes("-----BEGIN ")) throw bundleError(field, what, [invalid("must contain at least one CERTIFICATE block")]);
  let blocks: PemBlock[];
  try {
    blocks = decodePem(pem);
  } catch (err) {
    if (!isPlatformError(err)) throw err;
    throw bundleError(field, what, [invalid(err.message)]);
  }
  const problems: Problem[] = [];
  const certificates: string[] = [];
  const facts: CertificateFacts[] = [];
  const seen = new Map<string, number>();
  for (const block of blocks) {
    const where = describeBlock(block.index, block.label);
    if (block.label !== CERTIFICATE) {
      problems.push(invalid(`${where}: only CERTIFICATE blocks are allowed`));
      continue;
    }
    if (block.hasHeaders) problems.push(invalid(`${where}: PEM headers are not allowed`));
    const parsed = parseCertificate(block.der);
    if (typeof parsed === "string") {
      problems.push(invalid(`${where}: not a valid X.509 certificate (${parsed})`));
      continue;
    }
    const broken = rule(block, parsed);
    if (broken !== undefined) problems.push(invalid(`${where}: ${broken}`));
    if (refuseDuplicates) {
      const key = Buffer.from(block.der.buffer, block.der.byteOffset, block.der.byteLength).toString("latin1");
      const first = seen.get(key);
      if (first !== undefined) problems.push({ reason: "FieldValueDuplicate", message: `${where}: duplicate of block ${first + 1}` });
      else seen.set(key, block.index);
    }
    certificates.push(encodePem(CERTIFICATE, block.der));
    facts.push(parsed);
  }
  if (problems.length > 0) throw bundleError(field, what, problems);
  return { certificates, facts };
}

/** A parsed certificate, or the reason it does not parse (the strict DER reader's message). */
function parseCertificate(der: Uint8Array): CertificateFacts | string {
  try {
    return readCertificateFacts(der);
  } catch (err) {
    if (isPlatformError(err)) return err.message;
    throw err;
  }
}

interface Problem {
  readonly reason: "FieldValueInvalid" | "FieldValueDuplicate";
  readonly message: string;
}

const invalid = (message: string): Problem => ({ reason: "FieldValueInvalid", message });

function bundleError(field: string, what: string, problems: readonly Problem[]): PlatformError {
  const causes: ErrorCause[] = problems.map((p) => ({ field, reason: p.reason, message: p.message }));
  const summary = problems.map((p) => p.message).join("; ");
  return new PlatformError("BUNDLE_INVALID", `${field}: invalid ${what}: ${summary}`, { causes });
}

/**
 * The canonical form of a set of anchors: every CERTIFICATE block of every input, de-duplicated by DER,
 * sorted by DER bytes, re-encoded and joined. Equal sets give equal text, so the text can be hashed.
 */
export function canonicalizeBundle(pems: readonly string[]): string {
  const byDer = new Map<string, Uint8Array>();
  for (const pem of pems) {
    for (const block of decodePem(pem, { label: CERTIFICATE })) {
      byDer.set(Buffer.from(block.der.buffer, block.der.byteOffset, block.der.byteLength).toString("hex"), block.der);
    }
  }
  return [...byDer.keys()]
    .sort()
    .map((hex) => encodePem(CERTIFICATE, byDer.get(hex)!))
    .join("");
}

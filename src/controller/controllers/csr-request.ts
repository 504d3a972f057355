// Turns a CertificateSigningRequest object into the SigningRequest signers judge, parsing each request once.
import { Buffer } from "node:buffer";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { invalidOption } from "../../errors.js";
import { parseCsr } from "../../pki/csr.js";
import type { ParsedCsr } from "../../pki/types.js";
import type { SigningRequest } from "../../../signers/signer.js";

/**
 * spec.request is immutable, so a parse (with its signature check) is kept per object uid: the approver and the
 * signer both read every node-agent CSR, and a retry should not pay for the parse again. Least recently used
 * entries go first once `size` is reached.
 */
export class CsrParser {
  private readonly cache = new Map<string, ParsedCsr>();
  private readonly size: number;

  constructor(size = 4096) {
    if (!Number.isSafeInteger(size) || size < 0) throw invalidOption("size", "to be a whole number ≥ 0", size);
    this.size = size;
  }

  /** The SigningRequest of `csr`; throws the parse error (CSR_INVALID, CSR_SIGNATURE, PEM_*, KEY_*...) for a broken request. */
  request(csr: CertificateSigningRequest): SigningRequest {
    const spec = csr.spec;
    const parsed = this.parse(csr);
    return {
      signerName: spec.signerName,
      csr: parsed,
      usages: spec.usages ?? [],
      ...(spec.expirationSeconds !== undefined && { expirationSeconds: spec.expirationSeconds }),
      ...(spec.username !== undefined && { username: spec.username }),
      ...(spec.uid !== undefined && { uid: spec.uid }),
      ...(spec.groups !== undefined && { groups: spec.groups }),
      ...(spec.extra !== undefined && { extra: spec.extra }),
    };
  }

  private parse(csr: CertificateSigningRequest): ParsedCsr {
    const uid = csr.metadata.uid;
    const hit = uid === undefined ? undefined : this.cache.get(uid);
    if (hit) {
      this.cache.delete(uid!);
      this.cache.set(uid!, hit);
      return hit;
    }
    // JSON carries []byte as base64; inside is the PEM text.
    const parsed = parseCsr(Buffer.from(csr.spec.request ?? "", "base64").toString("latin1"));
    if (uid !== undefined && this.size > 0) {
      this.cache.set(uid, parsed);
      if (this.cache.size > this.size) this.cache.delete(this.cache.keys().next().value!);
    }
    return parsed;
  }
}

/** PlatformError codes that mean the request itself can never be issued: the CSR is marked Failed instead of retried. */
export const REQUEST_PROBLEM_CODES: ReadonlySet<string> = new Set([
  "SIGNER_REJECTED",
  "CSR_INVALID",
  "CSR_SIGNATURE",
  "PEM_INVALID",
  "PEM_LABEL",
  "PEM_HEADERS",
  "DER_INVALID",
  "INPUT_TOO_LARGE",
  "KEY_UNSUPPORTED",
  "KEY_TOO_WEAK",
  "KEY_INVALID",
  "USAGE_UNKNOWN",
  "LIFETIME_INVALID",
]);

// A CSR in and out of the controllers: its request parsed once for the signers, and /status or /approval writes that survive conflicts.
import { Buffer } from "node:buffer";
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { invalidOption, isPlatformError, PlatformError } from "../../errors.js";
import { csrDer, parseCsr } from "../../pki/csr.js";
import type { RequestFields } from "../../pki/pool-rules.js";
import type { ParsedCsr } from "../../pki/types.js";
import type { RequestBytes, SigningRequest } from "../../../signers/signer.js";

/**
 * spec.request is immutable, so a parse (with its signature check) is kept per object uid, for a retry of the
 * approver's and for a signer that reads the request itself after the approver did. Least recently used entries go
 * first once `size` is reached: 512 by default, since both come within moments of the first read (the node-agent
 * signers sign from the bytes, so a burst's parses are not read again), and a parse kept costs ~2.3 KB of heap that a
 * burst's collections copy to the old generation (4,096 kept ~9 MB on the controllers' heap).
 */
export class CsrParser {
  private readonly cache = new Map<string, ParsedCsr>();
  private readonly size: number;

  constructor(size = 512) {
    if (!Number.isSafeInteger(size) || size < 0) throw invalidOption("size", "to be a whole number ≥ 0", size);
    this.size = size;
  }

  /** The SigningRequest of `csr`; throws the parse error (CSR_INVALID, CSR_SIGNATURE, PEM_*, KEY_*...) for a broken request. */
  request(csr: CertificateSigningRequest): SigningRequest {
    return signingRequest(csr, this.parse(csr));
  }

  /**
   * The request of `csr` as bytes, not read, for a signer that reads, judges and checks it where it signs
   * (Signer.signBytes): on the signing pool's threads, where a request this process verified before (the API server's
   * create check in `up`, the approver's reading) is not checked again. Throws what its PEM armour has wrong.
   */
  bytes(csr: CertificateSigningRequest): RequestBytes {
    return { der: csrDer(requestPem(csr)), request: requestFields(csr) };
  }

  private parse(csr: CertificateSigningRequest): ParsedCsr {
    const uid = csr.metadata.uid;
    const hit = uid === undefined ? undefined : this.cache.get(uid);
    if (hit) {
      this.cache.delete(uid!);
      this.cache.set(uid!, hit);
      return hit;
    }
    const parsed = parseCsr(requestPem(csr));
    if (uid !== undefined && this.size > 0) {
      this.cache.set(uid, parsed);
      if (this.cache.size > this.size) this.cache.delete(this.cache.keys().next().value!);
    }
    return parsed;
  }
}

/** spec.request as its PEM text: JSON carries []byte as base64. */
function requestPem(csr: CertificateSigningRequest): string {
  return Buffer.from(csr.spec.request ?? "", "base64").toString("latin1");
}

function signingRequest(csr: CertificateSigningRequest, parsed: ParsedCsr): SigningRequest {
  return { ...requestFields(csr), csr: parsed };
}

function requestFields(csr: CertificateSigningRequest): RequestFields {
  const spec = csr.spec;
  return {
    signerName: spec.signerName,
    usages: spec.usages ?? [],
    ...(spec.expirationSeconds !== undefined && { expirationSeconds: spec.expirationSeconds }),
    ...(spec.username !== undefined && { username: spec.username }),
    ...(spec.uid !== undefined && { uid: spec.uid }),
    ...(spec.groups !== undefined && { groups: spec.groups }),
    ...(spec.extra !== undefined && { extra: spec.extra }),
  };
}

/** PlatformError codes of reading a request (parseCsr): its bytes, encoding, key or self-signature. */
export const READ_PROBLEM_CODES: ReadonlySet<string> = new Set([
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
]);

/** PlatformError codes that mean the request itself can never be issued: the CSR is marked Failed instead of retried. */
export const REQUEST_PROBLEM_CODES: ReadonlySet<string> = new Set(["SIGNER_REJECTED", ...READ_PROBLEM_CODES, "USAGE_UNKNOWN", "LIFETIME_INVALID"]);

export interface CsrWrite {
  readonly client: ResourceClient<CertificateSigningRequest>;
  readonly subresource: "status" | "approval";
  /**
   * Applies the change to a copy of the object as last read. The copy is shallow below `status`: the change may set
   * or replace fields of `copy.status` (as setCondition replaces the conditions list) but not edit nested values.
   */
  readonly change: (copy: CertificateSigningRequest) => void;
  /** Whether the object as re-read after a conflict no longer wants this write (issued, denied, failed...). */
  readonly settled: (fresh: CertificateSigningRequest) => boolean;
  /**
   * Whether the object as re-read already carries this very change: a write whose answer was lost (the client
   * retried it and got a conflict, or the server restarted after committing) counts as written.
   */
  readonly landed?: (fresh: CertificateSigningRequest) => boolean;
  readonly signal?: AbortSignal;
  /** Writes tried before giving up with a retryable CONFLICT (default 5). */
  readonly attempts?: number;
}

/**
 * Writes `change` over `from` with its resourceVersion as precondition. Returns the stored object, or undefined
 * when the object is gone, was replaced (another uid), or was settled by someone else meanwhile.
 */
export async function writeCsr(from: CertificateSigningRequest, w: CsrWrite): Promise<CertificateSigningRequest | undefined> {
  const attempts = w.attempts ?? 5;
  let current = from;
  for (let i = 0; i < attempts; i++) {
    // A deep clone of every CSR written was a visible cost; the writes only replace status fields.
    const copy: CertificateSigningRequest = { ...current, status: { ...current.status } };
    w.change(copy);
    try {
      return await w.client.update(copy, { subresource: w.subresource, signal: w.signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      if (!isPlatformError(err, "CONFLICT")) throw err;
    }
    let fresh: CertificateSigningRequest;
    try {
      fresh = await w.client.get(from.metadata.name!, { signal: w.signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
    if (fresh.metadata.uid !== from.metadata.uid) return undefined;
    if (w.landed?.(fresh)) return fresh;
    if (w.settled(fresh)) return undefined;
    current = fresh;
  }
  throw new PlatformError("CONFLICT", `certificatesigningrequest ${from.metadata.name} kept changing during ${attempts} writes to /${w.subresource}`, {
    retryable: true,
  });
}

/** Sets the condition of `condition.type` (replacing one of that type) on a copy's status. */
export function setCondition(csr: CertificateSigningRequest, condition: CertificateSigningRequestCondition): void {
  const status = (csr.status ??= {});
  const others = (status.conditions ?? []).filter((c) => c.type !== condition.type);
  status.conditions = [...others, condition];
}

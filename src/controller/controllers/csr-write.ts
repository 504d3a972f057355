// Writes to a CSR's /status or /approval that survive conflicts: re-read, stop if someone else settled it, else retry.
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError, PlatformError } from "../../errors.js";

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

/** A condition's Time: RFC 3339 in UTC to the second, as the API writes it. */
export function conditionTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

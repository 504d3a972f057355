// Certificate revocation: the RFC 5280 reasons the API accepts, the `Revoked` CSR condition, and reading it back.
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from "./types/csr.js";

/**
 * RFC 5280 §5.3.1 CRLReason names and codes accepted by the API. `certificateHold` and `removeFromCRL` are refused:
 * a `Revoked` condition is permanent (conditions of its kind are never removed), so a hold could not be lifted.
 */
export const REVOCATION_REASON_CODES = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;
export type RevocationReason = keyof typeof REVOCATION_REASON_CODES;
export const REVOCATION_REASONS = Object.keys(REVOCATION_REASON_CODES) as RevocationReason[];

export const isRevocationReason = (value: unknown): value is RevocationReason =>
  typeof value === "string" && Object.hasOwn(REVOCATION_REASON_CODES, value);

/** The condition type a revocation adds through `certificatesigningrequests/{name}/revocation`. */
export const REVOKED_CONDITION = "Revoked";

/** The subresource that revokes an issued CSR's certificate. */
export const REVOCATION_SUBRESOURCE = "revocation";

/** The CSR's `Revoked` condition when it has one with status True. */
export function revokedCondition(csr: Pick<CertificateSigningRequest, "status">): CertificateSigningRequestCondition | undefined {
  const conditions = csr.status?.conditions;
  return Array.isArray(conditions) ? conditions.find((c) => c?.type === REVOKED_CONDITION && c.status === "True") : undefined;
}

/** The condition a client adds to revoke: reason is the RFC 5280 name, message free text. */
export function revocationCondition(reason: string, message?: string): CertificateSigningRequestCondition {
  return { type: REVOKED_CONDITION, status: "True", reason, ...(message ? { message } : {}) };
}

// CertificateSigningRequest condition types and reasons, and the reads every controller makes of them.
import type { CertificateSigningRequest, CertificateSigningRequestCondition } from "./types/csr.js";

export const CsrConditionType = {
  Approved: "Approved",
  Denied: "Denied",
  Failed: "Failed",
  /** The issued certificate was revoked (src/api/revocation.ts); added only through the `revocation` subresource. */
  Revoked: "Revoked",
} as const;
export type CsrConditionType = (typeof CsrConditionType)[keyof typeof CsrConditionType];

/** Condition types that only take status "True" and, once present, stay. */
export const TERMINAL_CONDITION_TYPES: readonly CsrConditionType[] = ["Approved", "Denied", "Failed", "Revoked"];

export const ConditionStatus = { True: "True", False: "False", Unknown: "Unknown" } as const;
export const CONDITION_STATUSES: readonly string[] = ["True", "False", "Unknown"];

/** Reasons written by this product's controllers and commands (free text for others). */
export const CsrConditionReason = {
  /** The approving controller approved after an authorization check. */
  AutoApproved: "AutoApproved",
  /** `platformctl certificate approve`. */
  PlatformctlApprove: "PlatformctlApprove",
  /** `platformctl certificate deny`. */
  PlatformctlDeny: "PlatformctlDeny",
  /** The signer refused the request for good (subject, SANs, usages, extensions, lifetime). */
  SignerValidationFailure: "SignerValidationFailure",
  /** The signing controller could not produce a certificate for a reason that will not go away. */
  SigningFailed: "SigningFailed",
} as const;
export type CsrConditionReason = (typeof CsrConditionReason)[keyof typeof CsrConditionReason];

export const CsrConditionMessage = {
  AutoApproved: "Auto approving node-agent client certificate after SubjectAccessReview.",
  PlatformctlApprove: "This CSR was approved by platformctl certificate approve.",
  PlatformctlDeny: "This CSR was denied by platformctl certificate deny.",
} as const;

type CsrLike = Pick<CertificateSigningRequest, "status">;

/** The condition of `type`, if present (a well-formed object holds at most one per type). */
export function findCondition(csr: CsrLike, type: string): CertificateSigningRequestCondition | undefined {
  const conditions = csr.status?.conditions;
  return Array.isArray(conditions) ? conditions.find((c) => c?.type === type) : undefined;
}

function hasTrue(csr: CsrLike, type: CsrConditionType): boolean {
  return findCondition(csr, type)?.status === "True";
}

export const isApproved = (csr: CsrLike): boolean => hasTrue(csr, "Approved");
export const isDenied = (csr: CsrLike): boolean => hasTrue(csr, "Denied");
export const isFailed = (csr: CsrLike): boolean => hasTrue(csr, "Failed");
export const isRevoked = (csr: CsrLike): boolean => hasTrue(csr, "Revoked");
export const isIssued = (csr: CsrLike): boolean => typeof csr.status?.certificate === "string" && csr.status.certificate.length > 0;

/**
 * The CONDITION column as upstream prints it: Denied over Approved over Pending, then ",Failed" and ",Issued"
 * (e.g. "Approved,Issued", "Pending", "Denied", "Approved,Failed"), and ",Revoked" for a revoked certificate.
 */
export function csrConditionSummary(csr: CsrLike): string {
  let text = isDenied(csr) ? "Denied" : isApproved(csr) ? "Approved" : "Pending";
  if (isFailed(csr)) text += ",Failed";
  if (isIssued(csr)) text += ",Issued";
  if (isRevoked(csr)) text += ",Revoked";
  return text;
}

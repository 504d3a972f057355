// CertificateSigningRequest (certificates group, v1): the request, its approval conditions and the issued certificate.
import type { ApiObject, ApiList } from "../meta.js";

export const CSR_KIND = "CertificateSigningRequest";
export const CSR_VERSION = "v1";

export interface CertificateSigningRequestSpec {
  /** Base64 (as JSON carries []byte) of a PEM `CERTIFICATE REQUEST` block. */
  request: string;
  signerName: string;
  expirationSeconds?: number;
  usages?: string[];
  /** Set by the server from the creating user; immutable. */
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** "True" | "False" | "Unknown"; Approved, Denied and Failed only allow "True". */
export type ConditionStatus = "True" | "False" | "Unknown";

export interface CertificateSigningRequestCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
  lastTransitionTime?: string;
}

export interface CertificateSigningRequestStatus {
  /** Base64 (as JSON carries []byte) of the PEM chain, leaf first. */
  certificate?: string;
  conditions?: CertificateSigningRequestCondition[];
}

export interface CertificateSigningRequest extends ApiObject {
  spec: CertificateSigningRequestSpec;
  status?: CertificateSigningRequestStatus;
}

export type CertificateSigningRequestList = ApiList<CertificateSigningRequest>;

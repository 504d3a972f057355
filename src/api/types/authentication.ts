// Authentication group (v1): TokenRequest (body of serviceaccounts/token), TokenReview and SelfSubjectReview.
import type { ApiObject, UserInfo } from "../meta.js";

export const TOKEN_REQUEST_KIND = "TokenRequest";
export const TOKEN_REVIEW_KIND = "TokenReview";
export const SELF_SUBJECT_REVIEW_KIND = "SelfSubjectReview";
export const AUTHENTICATION_VERSION = "v1";

export type BoundObjectKind = "Pod" | "Secret";

export interface BoundObjectReference {
  apiVersion?: string;
  kind?: BoundObjectKind;
  name?: string;
  uid?: string;
}

export interface TokenRequestSpec {
  audiences: string[];
  /** Defaults to 3600; at least 600 and at most 2^32. */
  expirationSeconds?: number;
  boundObjectRef?: BoundObjectReference;
}

export interface TokenRequestStatus {
  token: string;
  expirationTimestamp: string;
}

export interface TokenRequest extends ApiObject {
  spec: TokenRequestSpec;
  status?: TokenRequestStatus;
}

export interface TokenReviewSpec {
  token?: string;
  audiences?: string[];
}

export interface TokenReviewStatus {
  authenticated?: boolean;
  user?: UserInfo;
  audiences?: string[];
  error?: string;
}

export interface TokenReview extends ApiObject {
  spec: TokenReviewSpec;
  status?: TokenReviewStatus;
}

export interface SelfSubjectReview extends ApiObject {
  status?: { userInfo?: UserInfo };
}

// Authorization group (v1): SubjectAccessReview and SelfSubjectAccessReview, the questions "may this user do this?"
// and "may I do this?", and their answer.
import type { ApiObject } from "../meta.js";

export const SUBJECT_ACCESS_REVIEW_KIND = "SubjectAccessReview";
export const SELF_SUBJECT_ACCESS_REVIEW_KIND = "SelfSubjectAccessReview";
export const AUTHORIZATION_VERSION = "v1";

export interface ResourceAttributes {
  namespace?: string;
  verb?: string;
  group?: string;
  version?: string;
  resource?: string;
  subresource?: string;
  name?: string;
}

export interface NonResourceAttributes {
  path?: string;
  verb?: string;
}

export interface SubjectAccessReviewSpec {
  /** Exactly one of resourceAttributes and nonResourceAttributes. */
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: NonResourceAttributes;
  /** At least one of user and groups. */
  user?: string;
  groups?: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

export interface SubjectAccessReviewStatus {
  allowed: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

export interface SubjectAccessReview extends ApiObject {
  spec: SubjectAccessReviewSpec;
  status?: SubjectAccessReviewStatus;
}

/** The question of a SelfSubjectAccessReview: the user is the one asking. */
export interface SelfSubjectAccessReviewSpec {
  /** Exactly one of resourceAttributes and nonResourceAttributes. */
  resourceAttributes?: ResourceAttributes;
  nonResourceAttributes?: NonResourceAttributes;
}

export interface SelfSubjectAccessReview extends ApiObject {
  spec: SelfSubjectAccessReviewSpec;
  status?: SubjectAccessReviewStatus;
}

export const SELF_SUBJECT_RULES_REVIEW_KIND = "SelfSubjectRulesReview";

/** What a user may do to resources: the verbs on the resources (and names) of the API groups. */
export interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

export interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}

/** The rules a user has in a namespace; `incomplete` when the authorizer could not list them all. */
export interface SubjectRulesReviewStatus {
  resourceRules: ResourceRule[];
  nonResourceRules: NonResourceRule[];
  incomplete: boolean;
  evaluationError?: string;
}

/** "What may I do in this namespace?" */
export interface SelfSubjectRulesReview extends ApiObject {
  spec: { namespace?: string };
  status?: SubjectRulesReviewStatus;
}

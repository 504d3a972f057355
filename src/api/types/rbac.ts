// RBAC (rbac.authorization group, v1): Role, ClusterRole and the bindings that grant them to subjects.
import type { ApiObject, ApiList } from "../meta.js";

export const ROLE_KIND = "Role";
export const CLUSTER_ROLE_KIND = "ClusterRole";
export const ROLE_BINDING_KIND = "RoleBinding";
export const CLUSTER_ROLE_BINDING_KIND = "ClusterRoleBinding";
export const RBAC_VERSION = "v1";

export type SubjectKind = "User" | "Group" | "ServiceAccount";
export const SUBJECT_KINDS: readonly SubjectKind[] = ["User", "Group", "ServiceAccount"];

export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  /** Only in ClusterRoles, and never together with resources. */
  nonResourceURLs?: string[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface AggregationRule {
  clusterRoleSelectors?: LabelSelector[];
}

export interface Role extends ApiObject {
  rules?: PolicyRule[];
}

export interface ClusterRole extends ApiObject {
  rules?: PolicyRule[];
  aggregationRule?: AggregationRule;
}

export interface RoleRef {
  /** The rbac group of the configured suffix. */
  apiGroup: string;
  kind: "Role" | "ClusterRole";
  name: string;
}

export interface Subject {
  kind: SubjectKind;
  name: string;
  /** Defaults to the rbac group for User and Group, "" for ServiceAccount. */
  apiGroup?: string;
  /** Empty for User and Group; the account's namespace for ServiceAccount. */
  namespace?: string;
}

export interface RoleBinding extends ApiObject {
  roleRef: RoleRef;
  subjects?: Subject[];
}

export interface ClusterRoleBinding extends ApiObject {
  roleRef: RoleRef;
  subjects?: Subject[];
}

export type RoleList = ApiList<Role>;
export type ClusterRoleList = ApiList<ClusterRole>;
export type RoleBindingList = ApiList<RoleBinding>;
export type ClusterRoleBindingList = ApiList<ClusterRoleBinding>;

// Rules shared by the four RBAC kinds: policy rules, aggregation selectors, roleRef, subjects and their apiGroup defaults.
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { SUBJECT_KINDS, type AggregationRule, type PolicyRule, type RoleRef, type Subject } from "../../../api/types/rbac.js";
import type { FieldError } from "../strategy.js";
import { dns1123SubdomainProblem, forbidden, index, invalid, notSupported, pathSegmentProblem, required, validateNameRule, validateQualifiedName } from "../validation.js";
import { isRecord } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";

const nonEmpty = (list: readonly unknown[] | undefined): boolean => (list?.length ?? 0) > 0;

/** Verbs always; then either resources (with apiGroups) or, in ClusterRoles only, nonResourceURLs. */
export function validatePolicyRules(rules: readonly PolicyRule[] | undefined, namespaced: boolean): FieldError[] {
  return (rules ?? []).flatMap((rule, i) => {
    const at = index("rules", i);
    const errors: FieldError[] = [];
    if (!nonEmpty(rule.verbs)) errors.push(required(`${at}.verbs`, "verbs must contain at least one value"));
    if (nonEmpty(rule.nonResourceURLs)) {
      if (namespaced) errors.push(invalid(`${at}.nonResourceURLs`, rule.nonResourceURLs, "namespaced rules cannot apply to non-resource URLs"));
      if (nonEmpty(rule.apiGroups) || nonEmpty(rule.resources) || nonEmpty(rule.resourceNames)) {
        errors.push(invalid(`${at}.nonResourceURLs`, rule.nonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"));
      }
      return errors;
    }
    if (!nonEmpty(rule.apiGroups)) errors.push(required(`${at}.apiGroups`, "resource rules must supply at least one api group"));
    if (!nonEmpty(rule.resources)) errors.push(required(`${at}.resources`, "resource rules must supply at least one resource"));
    return errors;
  });
}

const SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"];

export function validateAggregationRule(rule: AggregationRule | undefined): FieldError[] {
  if (rule === undefined) return [];
  const path = "aggregationRule.clusterRoleSelectors";
  const selectors = rule.clusterRoleSelectors ?? [];
  if (selectors.length === 0) return [required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil")];
  return selectors.flatMap((selector, i) => {
    const at = index(path, i);
    const errors = Object.keys(selector.matchLabels ?? {}).flatMap((k) => validateQualifiedName(`${at}.matchLabels`, k));
    (selector.matchExpressions ?? []).forEach((e, j) => {
      const ex = index(`${at}.matchExpressions`, j);
      errors.push(...validateQualifiedName(`${ex}.key`, e.key ?? ""));
      const withValues = e.operator === "In" || e.operator === "NotIn";
      if (!SELECTOR_OPERATORS.includes(e.operator)) errors.push(notSupported(`${ex}.operator`, e.operator, SELECTOR_OPERATORS));
      else if (withValues && !nonEmpty(e.values)) errors.push(required(`${ex}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
      else if (!withValues && nonEmpty(e.values)) errors.push(forbidden(`${ex}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    });
    return errors;
  });
}

/** roleRef names the rbac group, a kind from `kinds`, and a path-segment name. */
export function validateRoleRef(obj: ApiObject, names: GroupNames, kinds: readonly string[]): FieldError[] {
  const ref = obj.roleRef as Partial<RoleRef> | undefined;
  if (!ref) return [required("roleRef")];
  const errors: FieldError[] = [];
  if (ref.apiGroup !== names.rbac) errors.push(notSupported("roleRef.apiGroup", ref.apiGroup ?? "", [names.rbac]));
  if (!kinds.includes(ref.kind ?? "")) errors.push(notSupported("roleRef.kind", ref.kind ?? "", kinds));
  if (!ref.name) errors.push(required("roleRef.name"));
  else errors.push(...validateNameRule("roleRef.name", ref.name, pathSegmentProblem));
  return errors;
}

/** Subject rules; a ServiceAccount subject of a cluster-wide binding needs its namespace. */
export function validateSubjects(obj: ApiObject, names: GroupNames, namespaced: boolean): FieldError[] {
  const subjects = (obj.subjects as Subject[] | undefined) ?? [];
  return subjects.flatMap((s, i) => {
    const at = index("subjects", i);
    const errors: FieldError[] = [];
    if (!s.name) errors.push(required(`${at}.name`));
    switch (s.kind) {
      case "ServiceAccount":
        if (s.name) errors.push(...validateNameRule(`${at}.name`, s.name, dns1123SubdomainProblem));
        if (s.apiGroup) errors.push(notSupported(`${at}.apiGroup`, s.apiGroup, [""]));
        if (!namespaced && !s.namespace) errors.push(required(`${at}.namespace`));
        break;
      case "User":
      case "Group":
        if (s.apiGroup !== names.rbac) errors.push(notSupported(`${at}.apiGroup`, s.apiGroup ?? "", [names.rbac]));
        if (s.namespace) errors.push(forbidden(`${at}.namespace`, `must be empty for subjects of kind ${s.kind}`));
        break;
      default:
        errors.push(notSupported(`${at}.kind`, s.kind ?? "", SUBJECT_KINDS));
    }
    return errors;
  });
}

/** apiGroup defaults: the rbac group for User and Group, "" for ServiceAccount. */
export function defaultSubjects(obj: ApiObject, names: GroupNames): void {
  if (!Array.isArray(obj.subjects)) return;
  for (const s of obj.subjects) {
    if (!isRecord(s) || (s.apiGroup !== undefined && s.apiGroup !== "")) continue;
    if (s.kind === "User" || s.kind === "Group") s.apiGroup = names.rbac;
    else if (s.kind === "ServiceAccount") s.apiGroup = "";
  }
}

/** Columns and row of both binding kinds: the role, then users, groups and service accounts with -o wide. */
export const bindingColumns = [
  nameColumn,
  column("Role", "The role the binding grants."),
  ageColumn,
  column("Users", "Users in the binding.", 1),
  column("Groups", "Groups in the binding.", 1),
  column("ServiceAccounts", "ServiceAccounts in the binding.", 1),
];

export function bindingRow(obj: ApiObject, now: Date): unknown[] {
  const ref = (isRecord(obj.roleRef) ? obj.roleRef : {}) as Partial<RoleRef>;
  const subjects = Array.isArray(obj.subjects) ? (obj.subjects.filter(isRecord) as Partial<Subject>[]) : [];
  const of = (kind: string) => subjects.filter((s) => s.kind === kind);
  return [
    obj.metadata.name,
    `${ref.kind ?? ""}/${ref.name ?? ""}`,
    since(obj.metadata.creationTimestamp, now),
    of("User").map((s) => s.name).join(", "),
    of("Group").map((s) => s.name).join(", "),
    of("ServiceAccount").map((s) => `${s.namespace ?? ""}:${s.name}`).join(", "),
  ];
}

/** Columns and row of both role kinds, as upstream prints them. */
export const roleColumns = [nameColumn, { ...column("Created At", "When the role was created."), format: "date" }];

export const roleRow = (obj: ApiObject): unknown[] => [obj.metadata.name, obj.metadata.creationTimestamp ?? ""];

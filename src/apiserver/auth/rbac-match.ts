// Whether one RBAC PolicyRule covers a request: verbs, API groups, resources (incl. subresources and `*`), names, URLs.
import type { PolicyRule } from "../../api/types/rbac.js";
import type { AuthorizationAttributes } from "./authorizer.js";

const ALL = "*";

// Stored objects passed validation, but a lister may hand over anything: non-arrays match nothing.
function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

function includesOrAll(values: unknown, wanted: string): boolean {
  for (const v of list(values)) if (v === ALL || v === wanted) return true;
  return false;
}

/** `resources` holds the request's `resource[/subresource]`, `*`, or `*\/<subresource>`. */
export function resourceMatches(rule: PolicyRule, resource: string, subresource: string | undefined): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  for (const r of list(rule.resources)) {
    if (r === ALL || r === combined) return true;
    if (subresource && r === `*/${subresource}`) return true;
  }
  return false;
}

/** An empty `resourceNames` covers every name; otherwise the request must name one of them. */
export function resourceNameMatches(rule: PolicyRule, name: string | undefined): boolean {
  const names = list(rule.resourceNames);
  if (names.length === 0) return true;
  return name !== undefined && name !== "" && names.includes(name);
}

/** `nonResourceURLs` holds the path, `*`, or a prefix ending in `*`. */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  for (const u of list(rule.nonResourceURLs)) {
    if (typeof u !== "string") continue;
    if (u === ALL || u === path) return true;
    if (u.endsWith(ALL) && path.startsWith(u.replace(/\*+$/, ""))) return true;
  }
  return false;
}

export function ruleAllows(a: AuthorizationAttributes, rule: PolicyRule): boolean {
  if (!includesOrAll(rule.verbs, a.verb)) return false;
  if (!a.resourceRequest) return nonResourceUrlMatches(rule, a.path ?? "");
  return includesOrAll(rule.apiGroups, a.group ?? "") && resourceMatches(rule, a.resource ?? "", a.subresource) && resourceNameMatches(rule, a.name);
}

// Audit policy evaluation (pure): the first rule that matches a request gives its level, stages to omit and managed-field rule.
import type { AuditLevel, AuditPolicy, AuditPolicyRule, AuditStage } from "../config/audit-policy.js";

/** What a rule is matched against: upstream's authorizer attributes, as far as audit rules read them. */
export interface AuditAttributes {
  readonly user: { readonly username: string; readonly groups?: readonly string[] };
  readonly verb: string;
  /** False for non-resource paths (/version, /healthz, /apis...). */
  readonly resourceRequest: boolean;
  /** The URL path (non-resource requests). */
  readonly path: string;
  readonly group?: string;
  readonly resource?: string;
  readonly subresource?: string;
  /** Undefined or "" for cluster-scoped resources. */
  readonly namespace?: string;
  readonly name?: string;
}

/** The outcome for one request. */
export interface AuditDecision {
  readonly level: AuditLevel;
  readonly omitStages: readonly AuditStage[];
  readonly omitManagedFields: boolean;
  /** Index of the rule that matched (undefined: none did). */
  readonly rule?: number;
}

export const NOT_AUDITED: AuditDecision = Object.freeze({ level: "None", omitStages: [], omitManagedFields: false });

const has = (list: readonly string[], value: string | undefined): boolean => value !== undefined && list.includes(value);

/** Upstream's ruleMatchesResource: `*`, `resource`, `resource/sub`, `*\/sub` and `resource/*` (which also matches the resource itself). */
function matchesResource(rule: AuditPolicyRule, a: AuditAttributes): boolean {
  if (rule.resources.length === 0) return true;
  const resource = a.resource ?? "";
  const sub = a.subresource ?? "";
  const combined = sub ? `${resource}/${sub}` : resource;
  for (const gr of rule.resources) {
    if (gr.group !== (a.group ?? "")) continue;
    if (gr.resources.length === 0) return true;
    if (gr.resourceNames.length > 0 && !has(gr.resourceNames, a.name)) continue;
    for (const res of gr.resources) {
      if (res === "*" || res === combined) return true;
      if (sub && res.startsWith("*/") && res.slice(2) === sub) return true;
      if (res.endsWith("/*") && res.slice(0, -2) === resource) return true;
    }
  }
  return false;
}

/** `*` matches every path, `/prefix*` a prefix, anything else the exact path. */
function matchesUrl(rule: AuditPolicyRule, path: string): boolean {
  return rule.nonResourceURLs.some((spec) => (spec.endsWith("*") ? path.startsWith(spec.slice(0, -1)) : spec === path));
}

/** Whether every field of `rule` matches the request (an empty field matches everything). */
export function ruleMatches(rule: AuditPolicyRule, a: AuditAttributes): boolean {
  if (rule.users.length > 0 && !has(rule.users, a.user.username)) return false;
  if (rule.userGroups.length > 0 && !(a.user.groups ?? []).some((g) => rule.userGroups.includes(g))) return false;
  if (rule.verbs.length > 0 && !has(rule.verbs, a.verb)) return false;
  if (a.resourceRequest) {
    if (rule.nonResourceURLs.length > 0) return false;
    if (!matchesResource(rule, a)) return false;
    if (rule.namespaces.length > 0 && !has(rule.namespaces, a.namespace ?? "")) return false;
    return true;
  }
  if (rule.namespaces.length > 0 || rule.resources.length > 0) return false;
  return rule.nonResourceURLs.length === 0 || matchesUrl(rule, a.path);
}

/** The level, stages to omit (policy ∪ rule) and managed-field rule of the first matching rule; None when none matches. */
export function evaluatePolicy(policy: AuditPolicy, a: AuditAttributes): AuditDecision {
  const decisions = decisionsOf(policy);
  for (let i = 0; i < policy.rules.length; i++) if (ruleMatches(policy.rules[i]!, a)) return decisions[i]!;
  return decisions[policy.rules.length]!;
}

/** Each rule's decision (and the no-match one, last), made once per policy: a request only picks one. */
const decisionCache = new WeakMap<AuditPolicy, readonly AuditDecision[]>();

function decisionsOf(policy: AuditPolicy): readonly AuditDecision[] {
  let d = decisionCache.get(policy);
  if (!d) {
    const made: AuditDecision[] = policy.rules.map((rule, i) => {
      const omitStages = rule.omitStages.length === 0 ? policy.omitStages : [...new Set([...policy.omitStages, ...rule.omitStages])];
      return Object.freeze({ level: rule.level, omitStages, omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields, rule: i });
    });
    made.push(Object.freeze({ ...NOT_AUDITED, omitStages: policy.omitStages, omitManagedFields: policy.omitManagedFields }));
    decisionCache.set(policy, (d = made));
  }
  return d;
}

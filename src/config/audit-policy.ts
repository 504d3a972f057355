// The audit Policy (audit.<suffix>/v1, kind Policy): rules read and checked with field-named errors, levels and stages.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { FieldReader } from "../fields/reader.js";
import { bool, list, object, oneOf, opaque, text, type Field, type Value } from "../fields/schema.js";

/** Levels in increasing order of what is recorded. */
export const AUDIT_LEVELS = ["None", "Metadata", "Request", "RequestResponse"] as const;
export type AuditLevel = (typeof AUDIT_LEVELS)[number];
export const AUDIT_STAGES = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"] as const;
export type AuditStage = (typeof AUDIT_STAGES)[number];

export const AUDIT_POLICY_KIND = "Policy";
const WHAT = "audit policy";

export function auditApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  return `audit.${groupNames(groupSuffix).suffix}/v1`;
}

/** Whether `level` records at least as much as `atLeast`. */
export function levelAtLeast(level: AuditLevel, atLeast: AuditLevel): boolean {
  return AUDIT_LEVELS.indexOf(level) >= AUDIT_LEVELS.indexOf(atLeast);
}

/** A level that must be written (no default): a rule without one is refused. */
const level = (): Field<AuditLevel | undefined> => ({
  read: (v, path, r) => (v === undefined || v === null ? r.missing(path, `to be one of ${AUDIT_LEVELS.join(", ")}`) : r.oneOf(v, path, AUDIT_LEVELS, "None")),
});

/** omitManagedFields of a rule: unset (the policy's value applies) is kept apart from false. */
const optionalBool = (): Field<boolean | undefined> => ({ read: (v, path, r) => r.boolean(v, path) });

const stages = list(oneOf(AUDIT_STAGES, "RequestReceived"));

const groupResources = object({ group: text(), resources: list(text()), resourceNames: list(text()) });

const ruleShape = object({
  level: level(),
  users: list(text()),
  userGroups: list(text()),
  verbs: list(text()),
  resources: list(groupResources),
  namespaces: list(text()),
  nonResourceURLs: list(text()),
  omitStages: stages,
  omitManagedFields: optionalBool(),
});

const policyShape = object({ metadata: opaque(), rules: list(ruleShape), omitStages: stages, omitManagedFields: bool() }, ["apiVersion", "kind"]);

export type AuditPolicyRule = Omit<Value<typeof ruleShape>, "level"> & { readonly level: AuditLevel };
export type AuditPolicy = Omit<Value<typeof policyShape>, "rules" | "metadata"> & { readonly rules: readonly AuditPolicyRule[] };

/** The rules' cross-field checks, as upstream's validation: resourceNames need resources; a rule is for resources or URLs. */
function validate(doc: Record<string, unknown>, policy: Value<typeof policyShape>, r: FieldReader): void {
  if (!Array.isArray(doc.rules)) r.missing("rules", "to be a list of rules (the first that matches a request gives its level)");
  policy.rules.forEach((rule, i) => {
    const at = `rules[${i}]`;
    rule.resources.forEach((gr, j) => {
      if (gr.resourceNames.length > 0 && gr.resources.length === 0) r.problem(`${at}.resources[${j}].resourceNames`, "to be empty when `resources` is empty", gr.resourceNames);
      gr.resources.forEach((res, k) => {
        // `*`, `name`, `name/sub`, `*/sub`, `name/*`: one slash at most, no other wildcard use.
        if (!/^(\*|[^*/]+)(\/(\*|[^*/]+))?$/.test(res) || res === "*/*") r.problem(`${at}.resources[${j}].resources[${k}]`, "a resource, `*`, `resource/subresource`, `*/subresource` or `resource/*`", res);
      });
    });
    if (rule.nonResourceURLs.length > 0 && (rule.resources.length > 0 || rule.namespaces.length > 0)) {
      r.problem(`${at}.nonResourceURLs`, "to be empty when `resources` or `namespaces` is set (a rule matches resource requests or non-resource URLs)", rule.nonResourceURLs);
    }
    rule.nonResourceURLs.forEach((url, k) => {
      const star = url.indexOf("*");
      if (!url.startsWith("/") && url !== "*") r.problem(`${at}.nonResourceURLs[${k}]`, "a path starting with `/` (a trailing `*` matches a prefix)", url);
      else if (star !== -1 && star !== url.length - 1) r.problem(`${at}.nonResourceURLs[${k}]`, "a `*` only at the end", url);
    });
  });
}

export interface LoadedAuditPolicy {
  readonly source: string;
  readonly policy: AuditPolicy;
  /** Unknown fields (only with `strict: false`), for the caller to log. */
  readonly warnings: readonly string[];
}

export function parseAuditPolicy(text: string, source: string, options: ConfigLoadOptions = {}): LoadedAuditPolicy {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: auditApiVersion(options.groupSuffix), kind: AUDIT_POLICY_KIND }, r);
  const read = policyShape.read(doc, "", r);
  validate(doc, read, r);
  // Unknown fields are errors by default: a misspelt field (`namespace` for `namespaces`) would widen what a rule matches.
  const warnings = finish(r, { ...options, strict: options.strict ?? true }, WHAT, source);
  const { metadata: _metadata, ...policy } = read;
  return { source, policy: policy as AuditPolicy, warnings };
}

export async function loadAuditPolicy(path: string, options: ConfigLoadOptions = {}): Promise<LoadedAuditPolicy> {
  return parseAuditPolicy(await readConfigFile(path, WHAT), path, options);
}

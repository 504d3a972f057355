// What a policy records of one request, for unit tests of audit policies (`platform-ca/testing`): level, stages, bodies.
import type { UserInfo } from "../api/meta.js";
import { DEFAULT_GROUP_SUFFIX } from "../api/group.js";
import { AUDIT_STAGES, levelAtLeast, parseAuditPolicy, type AuditLevel, type AuditPolicy, type AuditStage } from "../config/audit-policy.js";
import { stringify } from "yaml";
import { evaluatePolicy } from "./policy.js";

/** A request as a policy sees it: a resource request when `resource` is set, else a non-resource `path`. */
export interface AuditedRequest {
  /** A user name, or the whole user (groups matter to `userGroups`). */
  readonly user: string | UserInfo;
  /** The API verb (get, list, watch, create, update, patch, delete, deletecollection); for a path, the lower-case method. */
  readonly verb: string;
  /** "" (default) for the core group. */
  readonly group?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The URL path of a non-resource request (/healthz, /version...). */
  readonly path?: string;
}

export interface AuditOutcome {
  readonly level: AuditLevel;
  /** The events written for this request, in order (none at level None). */
  readonly stages: readonly AuditStage[];
  /** Index of the matching rule in `rules`; undefined when none matched. */
  readonly rule: number | undefined;
  readonly requestBody: boolean;
  readonly responseBody: boolean;
  readonly omitManagedFields: boolean;
}

/**
 * Evaluates `policy` (YAML/JSON text, a parsed document, or a loaded AuditPolicy) for `request` as the server does.
 * A document is checked as `--audit-policy-file` would check it, so an invalid policy throws the same error.
 */
export function whatWouldBeAudited(policy: string | Record<string, unknown> | AuditPolicy, request: AuditedRequest, options: { groupSuffix?: string } = {}): AuditOutcome {
  const loaded = typeof policy === "string" || !isLoaded(policy) ? parseAuditPolicy(typeof policy === "string" ? policy : stringify(policy), "policy", { groupSuffix: options.groupSuffix ?? DEFAULT_GROUP_SUFFIX }).policy : policy;
  const user = typeof request.user === "string" ? { username: request.user } : request.user;
  const resourceRequest = request.resource !== undefined;
  const d = evaluatePolicy(loaded, { ...request, user, resourceRequest, path: request.path ?? "", group: request.group ?? "" });
  const omitted = new Set(d.omitStages);
  // Only long-running requests (watches) have a ResponseStarted stage; Panic only when the server fails.
  const stages = d.level === "None" ? [] : AUDIT_STAGES.filter((s) => s !== "Panic" && !omitted.has(s) && (s !== "ResponseStarted" || request.verb === "watch"));
  return {
    level: d.level,
    stages,
    rule: d.rule,
    requestBody: resourceRequest && levelAtLeast(d.level, "Request"),
    responseBody: resourceRequest && d.level === "RequestResponse",
    omitManagedFields: d.omitManagedFields,
  };
}

/** A loaded policy has every field defaulted (a document straight from YAML need not). */
function isLoaded(p: Record<string, unknown> | AuditPolicy): p is AuditPolicy {
  const rules = p.rules;
  return !("apiVersion" in p) && Array.isArray(p.omitStages) && Array.isArray(rules) && rules.every((r: Partial<AuditPolicy["rules"][number]>) => Array.isArray(r.users) && Array.isArray(r.resources) && Array.isArray(r.nonResourceURLs));
}

// The authorizer contract shared by RBAC, impersonation, admission and SubjectAccessReview, and upstream's 403 text.
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import { SYSTEM_MASTERS } from "./identity.js";
import type { Deadline } from "../webhook/deadline.js";

/** The request as authorization sees it; the pipeline's RequestAttributes extends it. */
export interface AuthorizationAttributes {
  readonly user: UserInfo;
  readonly verb: string;
  /** False for non-resource paths (/version, /healthz, /metrics). */
  readonly resourceRequest: boolean;
  /** The URL path of a non-resource request. */
  readonly path?: string;
  /** API group; "" for the core group. */
  readonly group?: string;
  /** API version (sent to webhook authorizers; RBAC ignores it). */
  readonly version?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** The request's deadline: webhooks (authorization, admission) stop waiting when it aborts. Not part of what is decided. */
  readonly deadline?: Deadline;
}

export interface AuthorizerDecision {
  readonly allowed: boolean;
  /** An explicit denial that no later authorizer may override (RBAC never denies; a webhook may). */
  readonly denied?: boolean;
  /** Which grant allowed it, or (denied) what went wrong while evaluating. */
  readonly reason: string;
  /** Problems met while evaluating (an unresolvable roleRef, an invalid subject): never a grant. */
  readonly evaluationErrors: readonly string[];
  /** The configured authorizer that decided (audited); unset outside an AuthorizationConfiguration chain. */
  readonly authorizer?: string;
}

export interface Authorizer {
  authorize(attributes: AuthorizationAttributes): AuthorizerDecision | Promise<AuthorizerDecision>;
}

/**
 * Upstream's 403 text: `certificatesigningrequests.certificates.platform.io "x" is forbidden: User "bob" cannot update
 * resource "certificatesigningrequests/approval" in API group "certificates.platform.io" at the cluster scope`.
 */
export function forbiddenMessage(a: AuthorizationAttributes, reason?: string): string {
  const who = `User ${JSON.stringify(a.user.username)}`;
  let what: string;
  let prefix: string;
  if (!a.resourceRequest) {
    what = `${who} cannot ${a.verb} path ${JSON.stringify(a.path ?? "")}`;
    prefix = "forbidden";
  } else {
    const resource = a.subresource ? `${a.resource ?? ""}/${a.subresource}` : (a.resource ?? "");
    const scope = a.namespace ? `in the namespace ${JSON.stringify(a.namespace)}` : "at the cluster scope";
    what = `${who} cannot ${a.verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(a.group ?? "")} ${scope}`;
    const qualified = a.group ? `${a.resource ?? ""}.${a.group}` : (a.resource ?? "");
    prefix = a.name ? `${qualified} ${JSON.stringify(a.name)} is forbidden` : `${qualified} is forbidden`;
  }
  return `${prefix}: ${what}${reason ? `: ${reason}` : ""}`;
}

/** FORBIDDEN with upstream's text and Status details naming the resource. */
export function forbiddenError(a: AuthorizationAttributes, reason?: string): PlatformError {
  const details = a.resourceRequest ? { name: a.name ?? "", group: a.group ?? "", kind: a.resource ?? "" } : {};
  return new PlatformError("FORBIDDEN", forbiddenMessage(a, reason), { details });
}

/** Members of these groups (default `system:masters`) are allowed everything before `next` is asked, as upstream. */
export function privilegedGroupsAuthorizer(next: Authorizer, groups: readonly string[] = [SYSTEM_MASTERS]): Authorizer {
  return {
    authorize(a) {
      const group = a.user.groups?.find((g) => groups.includes(g));
      if (group !== undefined) return { allowed: true, reason: `member of the privileged group ${JSON.stringify(group)}`, evaluationErrors: [] };
      return next.authorize(a);
    },
  };
}

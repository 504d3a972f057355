// SelfSubjectRulesReview: the rules the requesting user has in a namespace, as `kubectl auth can-i --list` shows them.
import type { UserInfo } from "../../api/meta.js";
import { SELF_SUBJECT_RULES_REVIEW_KIND, type NonResourceRule, type ResourceRule, type SubjectRulesReviewStatus } from "../../api/types/authorization.js";
import type { PolicyRule } from "../../api/types/rbac.js";
import { PlatformError } from "../../errors.js";
import type { Pipeline } from "../pipeline.js";
import { selfSubjectRulesReviewDefinition } from "../registry/resources/self-subject-rules-review.js";
import type { CreateHandler } from "../registry/strategy.js";
import { checkCreateBody } from "./create-body.js";

/** The rules of one user in one namespace; `incomplete` when the authorizer could not list all it would allow. */
export interface UserRules {
  readonly rules: readonly PolicyRule[];
  readonly errors: readonly string[];
  readonly incomplete?: boolean;
}

/** What can list a user's rules (the RBAC authorizer does). */
export interface RuleResolver {
  /** Every rule of `user` in `namespace`, cluster-wide ones included, and the problems met gathering them. */
  rulesFor(user: UserInfo, namespace: string): UserRules | Promise<UserRules>;
}

/** Every verb on everything: what upstream's AlwaysAllow authorizer lists. */
export const EVERYTHING: readonly PolicyRule[] = [
  { verbs: ["*"], apiGroups: ["*"], resources: ["*"] },
  { verbs: ["*"], nonResourceURLs: ["*"] },
];

/**
 * The rules of a server without RBAC (insecure-local): everything when its pipeline allows any request, as upstream's
 * AlwaysAllow authorizer lists them; otherwise none, marked incomplete.
 */
export function pipelineRuleResolver(pipeline: Pick<Pipeline, "authorize">): RuleResolver {
  return {
    async rulesFor(user, namespace) {
      const d = await pipeline.authorize({ user, verb: "*", resourceRequest: true, path: "", group: "*", resource: "*", namespace });
      return d.allowed ? { rules: EVERYTHING, errors: [] } : { rules: [], errors: [], incomplete: true };
    },
  };
}

const list = (v: readonly string[] | undefined): string[] => [...(v ?? [])];

/** Upstream's split of policy rules into resource rules and non-resource rules (a rule may give one of each). */
export function rulesReviewStatus(rules: readonly PolicyRule[], errors: readonly string[], incomplete = false): SubjectRulesReviewStatus {
  const resourceRules: ResourceRule[] = [];
  const nonResourceRules: NonResourceRule[] = [];
  for (const r of rules) {
    if ((r.resources ?? []).length > 0) {
      resourceRules.push({ verbs: list(r.verbs), apiGroups: list(r.apiGroups), resources: list(r.resources), ...(r.resourceNames?.length ? { resourceNames: list(r.resourceNames) } : {}) });
    }
    if ((r.nonResourceURLs ?? []).length > 0) nonResourceRules.push({ verbs: list(r.verbs), nonResourceURLs: list(r.nonResourceURLs) });
  }
  return { resourceRules, nonResourceRules, incomplete, ...(errors.length > 0 ? { evaluationError: errors.join("; ") } : {}) };
}

/** POST selfsubjectrulesreviews: the rules of the request's own (impersonated) user in spec.namespace. */
export function createSelfSubjectRulesReviewHandler(resolver: RuleResolver): CreateHandler {
  return async (body, ctx) => {
    if (!ctx.user) throw new PlatformError("UNAUTHORIZED", "the request carries no user to review");
    const review = checkCreateBody(selfSubjectRulesReviewDefinition(ctx.names).strategy, { group: ctx.names.authorization, kind: SELF_SUBJECT_RULES_REVIEW_KIND }, body, ctx);
    const namespace = (review.spec as { namespace?: string } | undefined)?.namespace ?? "";
    // Upstream's answer for a review without a namespace.
    if (namespace === "") throw new PlatformError("BAD_REQUEST", "no namespace on request");
    const { rules, errors, incomplete } = await resolver.rulesFor(ctx.user, namespace);
    return { ...review, status: rulesReviewStatus(rules, errors, incomplete) };
  };
}

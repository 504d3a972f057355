// SubjectAccessReview: "may this user do this?" answered by the authorizer for the user, groups and attributes in the
// spec; SelfSubjectAccessReview: the same question for the user making the request (impersonation applied).
import type { UserInfo } from "../../api/meta.js";
import {
  SELF_SUBJECT_ACCESS_REVIEW_KIND,
  SUBJECT_ACCESS_REVIEW_KIND,
  type SelfSubjectAccessReviewSpec,
  type SubjectAccessReviewSpec,
  type SubjectAccessReviewStatus,
} from "../../api/types/authorization.js";
import { PlatformError } from "../../errors.js";
import type { Pipeline } from "../pipeline.js";
import { selfSubjectAccessReviewDefinition } from "../registry/resources/self-subject-access-review.js";
import { subjectAccessReviewDefinition } from "../registry/resources/subject-access-review.js";
import type { CreateHandler } from "../registry/strategy.js";
import type { AuthorizationAttributes, Authorizer } from "./authorizer.js";
import { checkCreateBody } from "./create-body.js";

/** The attributes `spec` asks about for `user`. */
function accessAttributes(user: UserInfo, spec: SelfSubjectAccessReviewSpec): AuthorizationAttributes {
  const r = spec.resourceAttributes;
  if (r) {
    return {
      user,
      verb: r.verb ?? "",
      resourceRequest: true,
      group: r.group ?? "",
      resource: r.resource ?? "",
      ...(r.subresource && { subresource: r.subresource }),
      ...(r.namespace && { namespace: r.namespace }),
      ...(r.name && { name: r.name }),
    };
  }
  const n = spec.nonResourceAttributes ?? {};
  return { user, verb: n.verb ?? "", resourceRequest: false, path: n.path ?? "" };
}

/** The attributes a SubjectAccessReview spec asks about. */
export function reviewAttributes(spec: SubjectAccessReviewSpec): AuthorizationAttributes {
  const user: UserInfo = {
    username: spec.user ?? "",
    ...(spec.uid && { uid: spec.uid }),
    groups: [...(spec.groups ?? [])],
    ...(spec.extra && { extra: spec.extra }),
  };
  return accessAttributes(user, spec);
}

/** status.allowed/denied/reason/evaluationError of `attributes` from `authorizer`. */
async function reviewStatus(authorizer: Authorizer, attributes: AuthorizationAttributes): Promise<SubjectAccessReviewStatus> {
  const decision = await authorizer.authorize(attributes);
  return {
    allowed: decision.allowed,
    ...(decision.denied && { denied: true }),
    ...(decision.reason && { reason: decision.reason }),
    ...(decision.evaluationErrors.length > 0 && { evaluationError: decision.evaluationErrors.join("; ") }),
  };
}

/** POST subjectaccessreviews: status.allowed/denied/reason/evaluationError from `authorizer`. */
export function createSubjectAccessReviewHandler(authorizer: Authorizer): CreateHandler {
  return async (body, ctx) => {
    const review = checkCreateBody(subjectAccessReviewDefinition(ctx.names).strategy, { group: ctx.names.authorization, kind: SUBJECT_ACCESS_REVIEW_KIND }, body, ctx);
    return { ...review, status: await reviewStatus(authorizer, reviewAttributes(review.spec as SubjectAccessReviewSpec)) };
  };
}

/** POST selfsubjectaccessreviews: the same answer, for the request's own (impersonated) user. */
export function createSelfSubjectAccessReviewHandler(authorizer: Authorizer): CreateHandler {
  return async (body, ctx) => {
    if (!ctx.user) throw new PlatformError("UNAUTHORIZED", "the request carries no user to review");
    const review = checkCreateBody(selfSubjectAccessReviewDefinition(ctx.names).strategy, { group: ctx.names.authorization, kind: SELF_SUBJECT_ACCESS_REVIEW_KIND }, body, ctx);
    return { ...review, status: await reviewStatus(authorizer, accessAttributes(ctx.user, review.spec as SelfSubjectAccessReviewSpec)) };
  };
}

/**
 * The pipeline's authorization as an Authorizer (no evaluation errors): what a server without RBAC (insecure-local)
 * answers SelfSubjectAccessReviews with; a secure server registers its RBAC authorizer over it.
 */
export function pipelineAuthorizer(pipeline: Pick<Pipeline, "authorize">): Authorizer {
  return {
    async authorize(a) {
      const d = await pipeline.authorize({ ...a, path: a.path ?? "" });
      return { allowed: d.allowed, reason: d.reason ?? "", evaluationErrors: [] };
    },
  };
}

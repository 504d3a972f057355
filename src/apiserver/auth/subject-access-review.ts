// SubjectAccessReview: "may this user do this?" answered by the authorizer for the user, groups and attributes in the spec.
import type { UserInfo } from "../../api/meta.js";
import { SUBJECT_ACCESS_REVIEW_KIND, type SubjectAccessReviewSpec, type SubjectAccessReviewStatus } from "../../api/types/authorization.js";
import { subjectAccessReviewDefinition } from "../registry/resources/subject-access-review.js";
import type { CreateHandler } from "../registry/strategy.js";
import type { AuthorizationAttributes, Authorizer } from "./authorizer.js";
import { checkCreateBody } from "./create-body.js";

/** The attributes a SubjectAccessReview spec asks about. */
export function reviewAttributes(spec: SubjectAccessReviewSpec): AuthorizationAttributes {
  const user: UserInfo = {
    username: spec.user ?? "",
    ...(spec.uid && { uid: spec.uid }),
    groups: [...(spec.groups ?? [])],
    ...(spec.extra && { extra: spec.extra }),
  };
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

/** POST subjectaccessreviews: status.allowed/denied/reason/evaluationError from `authorizer`. */
export function createSubjectAccessReviewHandler(authorizer: Authorizer): CreateHandler {
  return async (body, ctx) => {
    const review = checkCreateBody(subjectAccessReviewDefinition(ctx.names).strategy, { group: ctx.names.authorization, kind: SUBJECT_ACCESS_REVIEW_KIND }, body, ctx);
    const decision = await authorizer.authorize(reviewAttributes(review.spec as SubjectAccessReviewSpec));
    const status: SubjectAccessReviewStatus = {
      allowed: decision.allowed,
      ...(decision.denied && { denied: true }),
      ...(decision.reason && { reason: decision.reason }),
      ...(decision.evaluationErrors.length > 0 && { evaluationError: decision.evaluationErrors.join("; ") }),
    };
    return { ...review, status };
  };
}

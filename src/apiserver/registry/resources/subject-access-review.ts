// SubjectAccessReview (authorization v1, create-only): "may this user do this?"; the authorizer fills status.
import type { GroupNames } from "../../../api/group.js";
import { AUTHORIZATION_VERSION, SUBJECT_ACCESS_REVIEW_KIND, type SelfSubjectAccessReviewSpec, type SubjectAccessReviewSpec } from "../../../api/types/authorization.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { invalid, required } from "../validation.js";
import { EXTRA, fields, STRING_LIST } from "./shape.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

/** The question of an access review (SubjectAccessReview and SelfSubjectAccessReview ask it alike). */
export const ACCESS_ATTRIBUTES_SHAPE = {
  resourceAttributes: fields({ namespace: "string", verb: "string", group: "string", version: "string", resource: "string", subresource: "string", name: "string" }),
  nonResourceAttributes: fields({ path: "string", verb: "string" }),
} as const;

export const ACCESS_REVIEW_STATUS_SHAPE = fields({ allowed: "boolean", denied: "boolean", reason: "string", evaluationError: "string" });

/** Exactly one of resourceAttributes and nonResourceAttributes, with upstream's messages. */
export function accessAttributesErrors(spec: SelfSubjectAccessReviewSpec): FieldError[] {
  if (spec.resourceAttributes && spec.nonResourceAttributes) {
    return [invalid("spec.nonResourceAttributes", spec.nonResourceAttributes, "cannot be specified in combination with resourceAttributes")];
  }
  if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
    return [invalid("spec.resourceAttributes", null, "exactly one of nonResourceAttributes or resourceAttributes must be specified")];
  }
  return [];
}

const strategy = buildStrategy({
  shape: fields({
    spec: fields({ ...ACCESS_ATTRIBUTES_SHAPE, user: "string", groups: STRING_LIST, uid: "string", extra: EXTRA }),
    status: ACCESS_REVIEW_STATUS_SHAPE,
  }),
  prepareForCreate(obj) {
    delete obj.status;
  },
  validate(obj) {
    const spec = obj.spec as SubjectAccessReviewSpec | undefined;
    if (!spec) return [required("spec")];
    const errors: FieldError[] = accessAttributesErrors(spec);
    if (!spec.user && !spec.groups?.length) errors.push(invalid("spec.user", spec.user ?? "", "at least one of user or group must be specified"));
    return errors;
  },
});

export function subjectAccessReviewDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.authorization,
    version: AUTHORIZATION_VERSION,
    kind: SUBJECT_ACCESS_REVIEW_KIND,
    plural: "subjectaccessreviews",
    namespaced: false,
    verbs: CREATE_ONLY_VERBS,
    nameRule: "dns-subdomain",
    createOnly: true,
    strategy,
  });
}

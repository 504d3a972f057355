// SubjectAccessReview (authorization v1, create-only): "may this user do this?"; the authorizer fills status.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { AUTHORIZATION_VERSION, SUBJECT_ACCESS_REVIEW_KIND, type SelfSubjectAccessReviewSpec, type SubjectAccessReviewSpec } from "../../../api/types/authorization.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { invalid, required } from "../validation.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

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
  schema: kindSchema(SUBJECT_ACCESS_REVIEW_KIND),
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

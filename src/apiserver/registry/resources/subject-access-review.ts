// SubjectAccessReview (authorization v1, create-only): "may this user do this?"; the authorizer fills status.
import type { GroupNames } from "../../../api/group.js";
import { AUTHORIZATION_VERSION, SUBJECT_ACCESS_REVIEW_KIND, type SubjectAccessReviewSpec } from "../../../api/types/authorization.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { invalid, required } from "../validation.js";
import { EXTRA, fields, STRING_LIST } from "./shape.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

const strategy = buildStrategy({
  shape: fields({
    spec: fields({
      resourceAttributes: fields({ namespace: "string", verb: "string", group: "string", version: "string", resource: "string", subresource: "string", name: "string" }),
      nonResourceAttributes: fields({ path: "string", verb: "string" }),
      user: "string",
      groups: STRING_LIST,
      uid: "string",
      extra: EXTRA,
    }),
    status: fields({ allowed: "boolean", denied: "boolean", reason: "string", evaluationError: "string" }),
  }),
  prepareForCreate(obj) {
    delete obj.status;
  },
  validate(obj) {
    const spec = obj.spec as SubjectAccessReviewSpec | undefined;
    if (!spec) return [required("spec")];
    const errors: FieldError[] = [];
    if (spec.resourceAttributes && spec.nonResourceAttributes) {
      errors.push(invalid("spec.nonResourceAttributes", spec.nonResourceAttributes, "cannot be specified in combination with resourceAttributes"));
    }
    if (!spec.resourceAttributes && !spec.nonResourceAttributes) {
      errors.push(invalid("spec.resourceAttributes", null, "exactly one of nonResourceAttributes or resourceAttributes must be specified"));
    }
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

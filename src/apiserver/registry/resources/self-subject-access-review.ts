// SelfSubjectAccessReview (authorization v1, create-only): "may I do this?"; answered for the (impersonated) caller.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { AUTHORIZATION_VERSION, SELF_SUBJECT_ACCESS_REVIEW_KIND, type SelfSubjectAccessReviewSpec } from "../../../api/types/authorization.js";
import type { ResourceDefinition } from "../strategy.js";
import { required } from "../validation.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";
import { accessAttributesErrors } from "./subject-access-review.js";

const strategy = buildStrategy({
  schema: kindSchema(SELF_SUBJECT_ACCESS_REVIEW_KIND),
  // The answer is the server's: a status the caller sent is dropped.
  prepareForCreate(obj) {
    delete obj.status;
  },
  validate(obj) {
    const spec = obj.spec as SelfSubjectAccessReviewSpec | undefined;
    return spec ? accessAttributesErrors(spec) : [required("spec")];
  },
});

export function selfSubjectAccessReviewDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.authorization,
    version: AUTHORIZATION_VERSION,
    kind: SELF_SUBJECT_ACCESS_REVIEW_KIND,
    plural: "selfsubjectaccessreviews",
    namespaced: false,
    verbs: CREATE_ONLY_VERBS,
    nameRule: "dns-subdomain",
    createOnly: true,
    strategy,
  });
}

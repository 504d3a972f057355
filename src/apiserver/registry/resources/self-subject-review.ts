// SelfSubjectReview (authentication v1, create-only): "who am I?"; the identity layer answers with the (impersonated) caller.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { AUTHENTICATION_VERSION, SELF_SUBJECT_REVIEW_KIND } from "../../../api/types/authentication.js";
import type { ResourceDefinition } from "../strategy.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

const strategy = buildStrategy({
  schema: kindSchema(SELF_SUBJECT_REVIEW_KIND),
  // Whatever the caller claims about itself is dropped: the server answers from the request's identity.
  prepareForCreate(obj) {
    delete obj.status;
  },
});

export function selfSubjectReviewDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.authentication,
    version: AUTHENTICATION_VERSION,
    kind: SELF_SUBJECT_REVIEW_KIND,
    plural: "selfsubjectreviews",
    namespaced: false,
    verbs: CREATE_ONLY_VERBS,
    nameRule: "dns-subdomain",
    createOnly: true,
    strategy,
  });
}

// SelfSubjectRulesReview (authorization v1, create-only): "what may I do in this namespace?"; answered for the caller.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { AUTHORIZATION_VERSION, SELF_SUBJECT_RULES_REVIEW_KIND } from "../../../api/types/authorization.js";
import type { ResourceDefinition } from "../strategy.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

const strategy = buildStrategy({
  schema: kindSchema(SELF_SUBJECT_RULES_REVIEW_KIND),
  // The answer is the server's: a status the caller sent is dropped.
  prepareForCreate(obj) {
    delete obj.status;
    obj.spec ??= {};
  },
});

export function selfSubjectRulesReviewDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.authorization,
    version: AUTHORIZATION_VERSION,
    kind: SELF_SUBJECT_RULES_REVIEW_KIND,
    plural: "selfsubjectrulesreviews",
    namespaced: false,
    verbs: CREATE_ONLY_VERBS,
    nameRule: "dns-subdomain",
    createOnly: true,
    strategy,
  });
}

// TokenReview (authentication v1, create-only): "whose token is this?"; the identity layer fills status.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { AUTHENTICATION_VERSION, TOKEN_REVIEW_KIND, type TokenReviewSpec } from "../../../api/types/authentication.js";
import type { ResourceDefinition } from "../strategy.js";
import { required } from "../validation.js";
import { buildStrategy, CREATE_ONLY_VERBS, defineResource } from "./strategy-kit.js";

const strategy = buildStrategy({
  schema: kindSchema(TOKEN_REVIEW_KIND),
  prepareForCreate(obj) {
    delete obj.status;
  },
  validate(obj) {
    const spec = obj.spec as TokenReviewSpec | undefined;
    return spec?.token ? [] : [required("spec.token", "token is required for TokenReview")];
  },
});

export function tokenReviewDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.authentication,
    version: AUTHENTICATION_VERSION,
    kind: TOKEN_REVIEW_KIND,
    plural: "tokenreviews",
    namespaced: false,
    verbs: CREATE_ONLY_VERBS,
    nameRule: "dns-subdomain",
    createOnly: true,
    strategy,
  });
}

// Field schemas of the identity and access kinds: TokenRequest, TokenReview, SelfSubjectReview, the access reviews, RBAC.
import * as s from "./nodes.js";
import { extra, kind, labelSelector, userInfo, type KindSchemaDefinition } from "./shared.js";

const boundObjectRef = s.object(
  {
    kind: s.tag(1, s.string("Pod or Secret.")),
    apiVersion: s.tag(2, s.string("API version of the referenced object.")),
    name: s.tag(3, s.string("Name of the referenced object.")),
    uid: s.tag(4, s.string("UID of the referenced object.")),
  },
  { description: "The token is valid only while this object exists." },
);

const tokenRequestSpec = s.object(
  {
    audiences: s.tag(1, s.atomicList(s.string(), "Intended audiences of the token; a recipient must find itself in this list or reject the token.")),
    boundObjectRef: s.tag(3, boundObjectRef),
    expirationSeconds: s.tag(4, s.int64("Requested validity in seconds; the issuer may return another, see status.expirationTimestamp.")),
  },
  { required: ["audiences"], description: "The audiences, lifetime and bound object of the requested token." },
);

const tokenRequestStatus = s.object(
  { token: s.tag(1, s.string("The opaque bearer token.")), expirationTimestamp: s.tag(2, s.time("When the token expires.")) },
  { required: ["token", "expirationTimestamp"], description: "Filled by the server." },
);

const tokenReviewSpec = s.object(
  {
    token: s.tag(1, s.string("The opaque bearer token.")),
    audiences: s.tag(2, s.atomicList(s.string(), "Identifiers the resource server uses for itself.")),
  },
  { description: "The token to review and the audiences it must be valid for." },
);

const tokenReviewStatus = s.object(
  {
    authenticated: s.tag(1, s.boolean("Whether the token belongs to a known user.")),
    user: s.tag(2, s.describe(userInfo, "The user the token belongs to.")),
    error: s.tag(3, s.string("Why the token could not be checked.")),
    audiences: s.tag(4, s.atomicList(s.string(), "Audiences that fit both the token and the spec.")),
  },
  { description: "Filled by the server." },
);

const resourceAttributes = s.object(
  {
    namespace: s.tag(1, s.string("Namespace of the action; empty for cluster-scoped resources or all namespaces.")),
    verb: s.tag(2, s.string("Verb of the action, e.g. get, list, create.")),
    group: s.tag(3, s.string("API group of the resource.")),
    version: s.tag(4, s.string("API version of the resource.")),
    resource: s.tag(5, s.string("Resource type, e.g. pods.")),
    subresource: s.tag(6, s.string("Subresource, e.g. status.")),
    name: s.tag(7, s.string("Name of the resource; empty for all.")),
  },
  { description: "A request on a resource; exactly one of this and nonResourceAttributes." },
);

const nonResourceAttributes = s.object(
  { path: s.tag(1, s.string("URL path of the request.")), verb: s.tag(2, s.string("HTTP verb of the request.")) },
  { description: "A request on a non-resource URL; exactly one of this and resourceAttributes." },
);

/** The question of SubjectAccessReview and SelfSubjectAccessReview (fields 1 and 2 of both specs), and their answer. */
const accessAttributes = { resourceAttributes: s.tag(1, resourceAttributes), nonResourceAttributes: s.tag(2, nonResourceAttributes) };

const accessReviewStatus = s.object(
  {
    allowed: s.tag(1, s.boolean("Whether the action is allowed.")),
    reason: s.tag(2, s.string("Why the action is allowed or denied.")),
    evaluationError: s.tag(3, s.string("Why the authorizer could not decide, if it could not.")),
    denied: s.tag(4, s.boolean("Whether the action is explicitly denied.")),
  },
  { required: ["allowed"], description: "The answer, filled by the server." },
);

const subjectAccessReviewSpec = s.object({
  ...accessAttributes,
  user: s.tag(3, s.string("The user to check for.")),
  groups: s.tag(4, s.atomicList(s.string(), "Groups of the user to check for.")),
  extra: s.tag(5, extra),
  uid: s.tag(6, s.string("UID of the user to check for.")),
});

const policyRule = s.object(
  {
    verbs: s.tag(1, s.atomicList(s.string(), "Verbs the rule allows; * for all.")),
    apiGroups: s.tag(2, s.atomicList(s.string(), 'API groups of the resources; "" for the core group.')),
    resources: s.tag(3, s.atomicList(s.string(), "Resources the rule applies to; * for all.")),
    resourceNames: s.tag(4, s.atomicList(s.string(), "Optional names the rule is limited to.")),
    nonResourceURLs: s.tag(5, s.atomicList(s.string(), "Non-resource URLs the rule allows (ClusterRoles only).")),
  },
  { required: ["verbs"] },
);

const rules = s.tag(2, s.atomicList(policyRule, "The policy rules of the role."));

const aggregationRule = s.object(
  { clusterRoleSelectors: s.tag(1, s.atomicList(labelSelector, "ClusterRoles whose rules are aggregated into this one.")) },
  { description: "Builds the rules from other ClusterRoles." },
);

const roleRef = s.object(
  {
    apiGroup: s.tag(1, s.string("Group of the referenced role.")),
    kind: s.tag(2, s.string("Kind of the referenced role: Role or ClusterRole.")),
    name: s.tag(3, s.string("Name of the referenced role.")),
  },
  { required: ["apiGroup", "kind", "name"], description: "The role granted; immutable." },
);

const subject = s.object(
  {
    kind: s.tag(1, s.string("User, Group or ServiceAccount.")),
    apiGroup: s.tag(2, s.string("Group of the subject: empty for ServiceAccount, the rbac group for User and Group.")),
    name: s.tag(3, s.string("Name of the subject.")),
    namespace: s.tag(4, s.string("Namespace of a ServiceAccount subject; empty for User and Group.")),
  },
  { required: ["kind", "name"] },
);

const binding = { subjects: s.tag(2, s.atomicList(subject, "Who the role is granted to.")), roleRef: s.tag(3, roleRef) };

/** authentication and authorization kinds. */
export const REVIEW_KINDS: readonly KindSchemaDefinition[] = [
  kind("authentication", "TokenRequest", { spec: s.tag(2, tokenRequestSpec), status: s.tag(3, tokenRequestStatus) }, {
    required: ["spec"],
    description: "Asks for a token of a service account, bound to an audience and a lifetime.",
  }),
  kind("authentication", "TokenReview", { spec: s.tag(2, tokenReviewSpec), status: s.tag(3, tokenReviewStatus) }, {
    description: "Asks who a token belongs to; answered in status, never stored.",
  }),
  kind("authentication", "SelfSubjectReview", {
    status: s.tag(2, s.object({ userInfo: s.tag(1, s.describe(userInfo, "The requesting user.")) }, { description: "Filled by the server." })),
  }, { description: "Asks who the requesting user is; answered in status, never stored." }),
  kind(
    "authorization",
    "SubjectAccessReview",
    { spec: s.tag(2, s.describe(subjectAccessReviewSpec, "The user and the action to check.")), status: s.tag(3, accessReviewStatus) },
    { required: ["spec"], description: "Asks whether a user may perform an action; answered in status, never stored." },
  ),
  kind(
    "authorization",
    "SelfSubjectAccessReview",
    {
      spec: s.tag(2, s.object(accessAttributes, { description: "The action to check for the requesting user." })),
      status: s.tag(3, accessReviewStatus),
    },
    { required: ["spec"], description: "Asks whether the requesting user may perform an action; answered in status, never stored." },
  ),
];

export const RBAC_KINDS: readonly KindSchemaDefinition[] = [
  kind("rbac", "Role", { rules }, { description: "Permissions within one namespace, granted by a RoleBinding." }),
  kind("rbac", "ClusterRole", { rules, aggregationRule: s.tag(3, aggregationRule) }, {
    description: "Permissions in every namespace or for cluster-scoped resources, granted by bindings.",
  }),
  kind("rbac", "RoleBinding", binding, {
    required: ["roleRef"],
    description: "Grants a Role or ClusterRole to subjects within the binding's namespace.",
  }),
  kind("rbac", "ClusterRoleBinding", binding, { required: ["roleRef"], description: "Grants a ClusterRole to subjects in every namespace." }),
];

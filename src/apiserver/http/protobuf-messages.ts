// Field tables of the protobuf messages kubectl's typed clients send, by kind; numbers from upstream's generated.proto files.
//
// Only request bodies are decoded (answers are JSON), so a table lists the fields a client can send; fields missing
// here are skipped on the wire like any unknown field.

/** `stringList` is upstream's ExtraValue: a message `{ repeated string items = 1 }` that is a plain list in JSON. */
export type Scalar = "string" | "bytes" | "int" | "bool" | "time" | "stringList";
export type Kind = Scalar | { readonly message: Desc } | { readonly map: Scalar };

export interface Field {
  readonly name: string;
  readonly kind: Kind;
  readonly repeated?: boolean;
}

export type Desc = Readonly<Record<number, Field>>;

const f = (name: string, kind: Kind, repeated = false): Field => ({ name, kind, repeated });
const msg = (desc: Desc): Kind => ({ message: desc });
const strings = (name: string) => f(name, "string", true);

// --- meta/v1 and runtime ---

export const TIME: Desc = { 1: f("seconds", "int"), 2: f("nanos", "int") };
export const TYPE_META: Desc = { 1: f("apiVersion", "string"), 2: f("kind", "string") };
/** runtime.Unknown: the envelope after the `k8s\0` prefix. */
export const UNKNOWN: Desc = { 1: f("typeMeta", msg(TYPE_META)), 2: f("raw", "bytes"), 3: f("contentEncoding", "string"), 4: f("contentType", "string") };

const OWNER_REFERENCE: Desc = {
  1: f("kind", "string"), 3: f("name", "string"), 4: f("uid", "string"), 5: f("apiVersion", "string"),
  6: f("controller", "bool"), 7: f("blockOwnerDeletion", "bool"),
};
const MANAGED_FIELDS: Desc = {
  1: f("manager", "string"), 2: f("operation", "string"), 3: f("apiVersion", "string"), 4: f("time", "time"),
  6: f("fieldsType", "string"), 7: f("fieldsV1", msg({ 1: f("Raw", "bytes") })), 8: f("subresource", "string"),
};
const OBJECT_META: Desc = {
  1: f("name", "string"), 2: f("generateName", "string"), 3: f("namespace", "string"), 4: f("selfLink", "string"),
  5: f("uid", "string"), 6: f("resourceVersion", "string"), 7: f("generation", "int"), 8: f("creationTimestamp", "time"),
  9: f("deletionTimestamp", "time"), 10: f("deletionGracePeriodSeconds", "int"), 11: f("labels", { map: "string" }),
  12: f("annotations", { map: "string" }), 13: f("ownerReferences", msg(OWNER_REFERENCE), true),
  14: strings("finalizers"), 17: f("managedFields", msg(MANAGED_FIELDS), true),
};
const CONDITION: Desc = {
  1: f("type", "string"), 2: f("status", "string"), 3: f("observedGeneration", "int"), 4: f("lastTransitionTime", "time"),
  5: f("reason", "string"), 6: f("message", "string"),
};

/** Kinds whose messages are `{ metadata = 1, spec = 2, status = 3 }`. */
function object(spec: Desc, status: Desc = {}): Desc {
  return { 1: f("metadata", msg(OBJECT_META)), 2: f("spec", msg(spec)), 3: f("status", msg(status)) };
}

// --- core/v1 ---

const OBJECT_REFERENCE: Desc = {
  1: f("kind", "string"), 2: f("namespace", "string"), 3: f("name", "string"), 4: f("uid", "string"),
  5: f("apiVersion", "string"), 6: f("resourceVersion", "string"), 7: f("fieldPath", "string"),
};
const SERVICE_ACCOUNT: Desc = {
  1: f("metadata", msg(OBJECT_META)), 2: f("secrets", msg(OBJECT_REFERENCE), true),
  3: f("imagePullSecrets", msg({ 1: f("name", "string") }), true), 4: f("automountServiceAccountToken", "bool"),
};
const NAMESPACE = object({ 1: strings("finalizers") }, { 1: f("phase", "string"), 2: f("conditions", msg(CONDITION), true) });
const SECRET: Desc = {
  1: f("metadata", msg(OBJECT_META)), 2: f("data", { map: "bytes" }), 3: f("type", "string"),
  4: f("stringData", { map: "string" }), 5: f("immutable", "bool"),
};

// --- authentication/v1 ---

const USER_INFO: Desc = { 1: f("username", "string"), 2: f("uid", "string"), 3: strings("groups"), 4: f("extra", { map: "stringList" }) };
const TOKEN_REQUEST = object(
  {
    1: strings("audiences"), 4: f("expirationSeconds", "int"),
    3: f("boundObjectRef", msg({ 1: f("kind", "string"), 2: f("apiVersion", "string"), 3: f("name", "string"), 4: f("uid", "string") })),
  },
  { 1: f("token", "string"), 2: f("expirationTimestamp", "time") },
);
const TOKEN_REVIEW = object(
  { 1: f("token", "string"), 2: strings("audiences") },
  { 1: f("authenticated", "bool"), 2: f("user", msg(USER_INFO)), 3: f("error", "string"), 4: strings("audiences") },
);
const SELF_SUBJECT_REVIEW: Desc = { 1: f("metadata", msg(OBJECT_META)), 2: f("status", msg({ 1: f("userInfo", msg(USER_INFO)) })) };

// --- authorization/v1 ---

/** Fields 1 and 2 of SubjectAccessReviewSpec and SelfSubjectAccessReviewSpec. */
const ACCESS_ATTRIBUTES: Desc = {
  1: f("resourceAttributes", msg({
    1: f("namespace", "string"), 2: f("verb", "string"), 3: f("group", "string"), 4: f("version", "string"),
    5: f("resource", "string"), 6: f("subresource", "string"), 7: f("name", "string"),
  })),
  2: f("nonResourceAttributes", msg({ 1: f("path", "string"), 2: f("verb", "string") })),
};
const ACCESS_REVIEW_STATUS: Desc = { 1: f("allowed", "bool"), 2: f("reason", "string"), 3: f("evaluationError", "string"), 4: f("denied", "bool") };
const SUBJECT_ACCESS_REVIEW = object(
  { ...ACCESS_ATTRIBUTES, 3: f("user", "string"), 4: strings("groups"), 5: f("extra", { map: "stringList" }), 6: f("uid", "string") },
  ACCESS_REVIEW_STATUS,
);
const SELF_SUBJECT_ACCESS_REVIEW = object(ACCESS_ATTRIBUTES, ACCESS_REVIEW_STATUS);

// --- rbac/v1 ---

const POLICY_RULE: Desc = { 1: strings("verbs"), 2: strings("apiGroups"), 3: strings("resources"), 4: strings("resourceNames"), 5: strings("nonResourceURLs") };
const ROLE: Desc = { 1: f("metadata", msg(OBJECT_META)), 2: f("rules", msg(POLICY_RULE), true) };
const CLUSTER_ROLE: Desc = {
  ...ROLE,
  3: f("aggregationRule", msg({ 1: f("clusterRoleSelectors", msg({ 1: f("matchLabels", { map: "string" }) }), true) })),
};
const BINDING: Desc = {
  1: f("metadata", msg(OBJECT_META)),
  2: f("subjects", msg({ 1: f("kind", "string"), 2: f("apiGroup", "string"), 3: f("name", "string"), 4: f("namespace", "string") }), true),
  3: f("roleRef", msg({ 1: f("apiGroup", "string"), 2: f("kind", "string"), 3: f("name", "string") })),
};

// --- certificates/v1 ---

const CSR = object(
  {
    1: f("request", "bytes"), 2: f("username", "string"), 3: f("uid", "string"), 4: strings("groups"),
    5: strings("usages"), 6: f("extra", { map: "stringList" }), 7: f("signerName", "string"), 8: f("expirationSeconds", "int"),
  },
  {
    1: f("conditions", msg({
      1: f("type", "string"), 2: f("reason", "string"), 3: f("message", "string"), 4: f("lastUpdateTime", "time"),
      5: f("lastTransitionTime", "time"), 6: f("status", "string"),
    }), true),
    2: f("certificate", "bytes"),
  },
);

/** Messages by kind; the group is whatever the endpoint serves (checked by the registry like any body). */
export const MESSAGES: Readonly<Record<string, Desc>> = {
  CertificateSigningRequest: CSR,
  ClusterRole: CLUSTER_ROLE,
  ClusterRoleBinding: BINDING,
  Namespace: NAMESPACE,
  Role: ROLE,
  RoleBinding: BINDING,
  Secret: SECRET,
  SelfSubjectAccessReview: SELF_SUBJECT_ACCESS_REVIEW,
  SelfSubjectReview: SELF_SUBJECT_REVIEW,
  ServiceAccount: SERVICE_ACCOUNT,
  SubjectAccessReview: SUBJECT_ACCESS_REVIEW,
  TokenRequest: TOKEN_REQUEST,
  TokenReview: TOKEN_REVIEW,
};

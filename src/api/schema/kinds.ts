// The field schema of every kind the server serves, written with group roles so the group suffix stays one setting.
import * as s from "./nodes.js";
import { certificateSigningRequest, clusterTrustBundle } from "./certificates.js";
import { extra, kind, labelSelector, listMeta, localObjectReference, objectReference, userInfo, type KindSchemaDefinition } from "./shared.js";

/** The question of SubjectAccessReview and SelfSubjectAccessReview, and their answer. */
const accessAttributes = {
  resourceAttributes: s.object(
    {
      namespace: s.string("Namespace of the action; empty for cluster-scoped resources or all namespaces."),
      verb: s.string("Verb of the action, e.g. get, list, create."),
      group: s.string("API group of the resource."),
      version: s.string("API version of the resource."),
      resource: s.string("Resource type, e.g. pods."),
      subresource: s.string("Subresource, e.g. status."),
      name: s.string("Name of the resource; empty for all."),
    },
    { description: "A request on a resource; exactly one of this and nonResourceAttributes." },
  ),
  nonResourceAttributes: s.object(
    { path: s.string("URL path of the request."), verb: s.string("HTTP verb of the request.") },
    { description: "A request on a non-resource URL; exactly one of this and resourceAttributes." },
  ),
};
const accessReviewStatus = s.object(
  {
    allowed: s.boolean("Whether the action is allowed."),
    denied: s.boolean("Whether the action is explicitly denied."),
    reason: s.string("Why the action is allowed or denied."),
    evaluationError: s.string("Why the authorizer could not decide, if it could not."),
  },
  { required: ["allowed"], description: "The answer, filled by the server." },
);

const policyRule = s.object(
  {
    verbs: s.atomicList(s.string(), "Verbs the rule allows; * for all."),
    apiGroups: s.atomicList(s.string(), "API groups of the resources; \"\" for the core group."),
    resources: s.atomicList(s.string(), "Resources the rule applies to; * for all."),
    resourceNames: s.atomicList(s.string(), "Optional names the rule is limited to."),
    nonResourceURLs: s.atomicList(s.string(), "Non-resource URLs the rule allows (ClusterRoles only)."),
  },
  { required: ["verbs"] },
);

const binding = {
  roleRef: s.object(
    {
      apiGroup: s.string("Group of the referenced role."),
      kind: s.string("Kind of the referenced role: Role or ClusterRole."),
      name: s.string("Name of the referenced role."),
    },
    { required: ["apiGroup", "kind", "name"], description: "The role granted; immutable." },
  ),
  subjects: s.atomicList(
    s.object(
      {
        kind: s.string("User, Group or ServiceAccount."),
        apiGroup: s.string("Group of the subject: empty for ServiceAccount, the rbac group for User and Group."),
        name: s.string("Name of the subject."),
        namespace: s.string("Namespace of a ServiceAccount subject; empty for User and Group."),
      },
      { required: ["kind", "name"] },
    ),
    "Who the role is granted to.",
  ),
};

const envVar = s.object({ name: s.string(), value: s.string(), valueFrom: s.any() }, { required: ["name"] });

const containerPort = s.object(
  { containerPort: s.int32(), name: s.string(), protocol: s.string(), hostPort: s.int32(), hostIP: s.string() },
  { required: ["containerPort"] },
);

const container = s.object(
  {
    name: s.string(),
    image: s.string(),
    command: s.atomicList(),
    args: s.atomicList(),
    env: s.mapList(envVar, ["name"]),
    ports: s.mapList(containerPort, ["containerPort", "protocol"], { patchMergeKey: "containerPort" }),
  },
  { required: ["name"], preserveUnknown: true },
);

const podSpec = s.object(
  {
    containers: s.mapList(container, ["name"]),
    initContainers: s.mapList(container, ["name"]),
    volumes: s.mapList(s.object({ name: s.string() }, { required: ["name"], preserveUnknown: true }), ["name"], { retainKeys: true }),
    nodeName: s.string(),
    serviceAccountName: s.string(),
    restartPolicy: s.string(),
  },
  { required: ["containers"], preserveUnknown: true },
);

const containerStatus = s.object(
  { name: s.string(), ready: s.boolean(), restartCount: s.int32(), image: s.string() },
  { required: ["name", "ready", "restartCount", "image"], preserveUnknown: true },
);

const podStatus = s.object({ phase: s.string(), reason: s.string(), podIP: s.string(), containerStatuses: s.atomicList(containerStatus) }, { preserveUnknown: true });

export const KIND_SCHEMAS: readonly KindSchemaDefinition[] = [
  kind("core", "ServiceAccount", {
    automountServiceAccountToken: s.boolean("Whether Pods running as this account mount an API token automatically; a Pod can override it."),
    imagePullSecrets: s.atomicList(localObjectReference, "Secrets in the same namespace used to pull the images of Pods using this account."),
    secrets: s.mapList(objectReference, ["name"], { description: "Secrets in the same namespace that Pods using this account may use; deprecated." }),
  }),
  kind("core", "Namespace", {
    spec: s.object({ finalizers: s.atomicList(s.string(), "Values that must be empty before the namespace is removed.") }),
    status: s.object({ phase: s.string("Active or Terminating.") }),
  }),
  kind("core", "Secret", {
    data: s.map(s.bytes(), "Secret data, each value base64-encoded."),
    stringData: s.map(s.string(), "Write-only plain-text data, merged into data on write."),
    type: s.string("Type of the secret, for programmatic handling."),
    immutable: s.boolean("Whether data can no longer change."),
  }),
  kind("core", "Pod", { spec: podSpec, status: podStatus }),
  kind("core", "Status", {
    metadata: listMeta,
    status: s.string("Success or Failure."),
    message: s.string("Human-readable description of the status."),
    reason: s.string("Machine-readable reason for a Failure."),
    details: s.object({
      name: s.string(),
      group: s.string(),
      kind: s.string(),
      uid: s.string(),
      causes: s.atomicList(s.object({ reason: s.string(), message: s.string(), field: s.string() })),
      retryAfterSeconds: s.int32(),
    }),
    code: s.int32("HTTP status code of the status."),
  }),
  kind("core", "DeleteOptions", {
    gracePeriodSeconds: s.int64(),
    preconditions: s.object({ uid: s.string(), resourceVersion: s.string() }),
    orphanDependents: s.boolean(),
    propagationPolicy: s.string(),
    dryRun: s.atomicList(),
    ignoreStoreReadErrorWithClusterBreakingPotential: s.boolean(),
  }),
  kind(
    "authentication",
    "TokenRequest",
    {
      spec: s.object(
        {
          audiences: s.atomicList(s.string(), "Intended audiences of the token; a recipient must find itself in this list or reject the token."),
          expirationSeconds: s.int64("Requested validity in seconds; the issuer may return another, see status.expirationTimestamp."),
          boundObjectRef: s.object(
            {
              apiVersion: s.string("API version of the referenced object."),
              kind: s.string("Pod or Secret."),
              name: s.string("Name of the referenced object."),
              uid: s.string("UID of the referenced object."),
            },
            { description: "The token is valid only while this object exists." },
          ),
        },
        { required: ["audiences"] },
      ),
      status: s.object(
        { token: s.string("The opaque bearer token."), expirationTimestamp: s.time("When the token expires.") },
        { required: ["token", "expirationTimestamp"], description: "Filled by the server." },
      ),
    },
    { required: ["spec"] },
  ),
  kind("authentication", "TokenReview", {
    spec: s.object({ token: s.string("The opaque bearer token."), audiences: s.atomicList(s.string(), "Identifiers the resource server uses for itself.") }),
    status: s.object(
      {
        authenticated: s.boolean("Whether the token belongs to a known user."),
        user: s.describe(userInfo, "The user the token belongs to."),
        audiences: s.atomicList(s.string(), "Audiences that fit both the token and the spec."),
        error: s.string("Why the token could not be checked."),
      },
      { description: "Filled by the server." },
    ),
  }),
  kind("authentication", "SelfSubjectReview", { status: s.object({ userInfo: s.describe(userInfo, "The requesting user.") }, { description: "Filled by the server." }) }),
  kind(
    "authorization",
    "SubjectAccessReview",
    {
      spec: s.object({
        ...accessAttributes,
        user: s.string("The user to check for."),
        groups: s.atomicList(s.string(), "Groups of the user to check for."),
        uid: s.string("UID of the user to check for."),
        extra,
      }),
      status: accessReviewStatus,
    },
    { required: ["spec"] },
  ),
  kind("authorization", "SelfSubjectAccessReview", { spec: s.object(accessAttributes), status: accessReviewStatus }, { required: ["spec"] }),
  certificateSigningRequest,
  clusterTrustBundle,
  kind("rbac", "Role", { rules: s.atomicList(policyRule, "The policy rules of the role.") }),
  kind("rbac", "ClusterRole", {
    rules: s.atomicList(policyRule, "The policy rules of the role."),
    aggregationRule: s.object(
      { clusterRoleSelectors: s.atomicList(labelSelector, "ClusterRoles whose rules are aggregated into this one.") },
      { description: "Builds the rules from other ClusterRoles." },
    ),
  }),
  kind("rbac", "RoleBinding", binding, { required: ["roleRef"] }),
  kind("rbac", "ClusterRoleBinding", binding, { required: ["roleRef"] }),
  kind(
    "apps",
    "ControllerRevision",
    { revision: s.int64("Revision of the state held in data."), data: s.any("Serialized state, stored as raw JSON.") },
    { required: ["revision"] },
  ),
  kind(
    "events",
    "Event",
    {
      eventTime: s.time("Time the event was first observed."),
      series: s.object(
        { count: s.int32("Occurrences of the series up to the last heartbeat."), lastObservedTime: s.time("Time of the last occurrence.") },
        { required: ["count", "lastObservedTime"], description: "Data of an event series; absent for a single event." },
      ),
      action: s.string("Machine-readable action taken or failed; at most 128 characters."),
      reason: s.string("Why the action was taken; at most 128 characters."),
      note: s.string("Human-readable description of the action status; at most 1 kB."),
      type: s.string("Normal or Warning."),
      regarding: s.describe(objectReference, "The object the event is about."),
      related: s.describe(objectReference, "An optional secondary object."),
      reportingController: s.string("Name of the controller that emitted the event."),
      reportingInstance: s.string("ID of the controller instance; at most 128 characters."),
      deprecatedCount: s.int32("Deprecated; for compatibility with core events."),
      deprecatedFirstTimestamp: s.time("Deprecated; for compatibility with core events."),
      deprecatedLastTimestamp: s.time("Deprecated; for compatibility with core events."),
      deprecatedSource: s.object({ component: s.string(), host: s.string() }, { description: "Deprecated; for compatibility with core events." }),
    },
    { required: ["eventTime"] },
  ),
  kind("coordination", "Lease", {
    spec: s.object({
      holderIdentity: s.string("Identity of the holder of the lease."),
      leaseDurationSeconds: s.int32("Seconds candidates wait before they may take the lease."),
      acquireTime: s.time("When the current holder acquired the lease."),
      renewTime: s.time("When the current holder last renewed the lease."),
      leaseTransitions: s.int32("Number of holder changes."),
      strategy: s.string("Coordinated leader election strategy."),
      preferredHolder: s.string("Holder the strategy prefers; needs strategy."),
    }),
  }),
];

// The field schema of every kind the server serves, written with group roles so the group suffix stays one setting.
import * as s from "./nodes.js";
import type { ObjectNode, SchemaNode } from "./nodes.js";

/** A group by its role; "core" is the empty group, "apps" is fixed, the rest derive from the suffix. */
export type GroupRole = "core" | "apps" | "certificates" | "authentication" | "authorization" | "rbac" | "events" | "coordination";

export interface KindSchemaDefinition {
  readonly role: GroupRole;
  readonly kind: string;
  readonly root: ObjectNode;
}

const ownerReference = s.object({
  apiVersion: s.string,
  kind: s.string,
  name: s.string,
  uid: s.string,
  controller: s.boolean,
  blockOwnerDeletion: s.boolean,
});

const managedFieldsEntry = s.object({
  manager: s.string,
  operation: s.string,
  apiVersion: s.string,
  time: s.string,
  fieldsType: s.string,
  fieldsV1: s.any,
  subresource: s.string,
});

export const objectMeta = s.object({
  name: s.string,
  generateName: s.string,
  namespace: s.string,
  selfLink: s.string,
  uid: s.string,
  resourceVersion: s.string,
  generation: s.integer,
  creationTimestamp: s.string,
  deletionTimestamp: s.string,
  deletionGracePeriodSeconds: s.integer,
  labels: s.map(),
  annotations: s.map(),
  ownerReferences: s.mergeList(ownerReference, "uid"),
  finalizers: s.setList(),
  managedFields: s.atomicList(managedFieldsEntry),
});

const listMeta = s.object({ selfLink: s.string, resourceVersion: s.string, continue: s.string, remainingItemCount: s.integer });

const objectReference = s.object({
  apiVersion: s.string,
  kind: s.string,
  namespace: s.string,
  name: s.string,
  uid: s.string,
  resourceVersion: s.string,
  fieldPath: s.string,
});

const localObjectReference = s.object({ name: s.string });

/** map[string][]string, as in UserInfo.extra. */
const extra = s.map(s.atomicList());

const userInfo = s.object({ username: s.string, uid: s.string, groups: s.atomicList(), extra });

/** The question of SubjectAccessReview and SelfSubjectAccessReview, and their answer. */
const accessAttributes = {
  resourceAttributes: s.object({
    namespace: s.string,
    verb: s.string,
    group: s.string,
    version: s.string,
    resource: s.string,
    subresource: s.string,
    name: s.string,
  }),
  nonResourceAttributes: s.object({ path: s.string, verb: s.string }),
};
const accessReviewStatus = s.object({ allowed: s.boolean, denied: s.boolean, reason: s.string, evaluationError: s.string });

const labelSelector = s.object({
  matchLabels: s.map(),
  matchExpressions: s.atomicList(s.object({ key: s.string, operator: s.string, values: s.atomicList() })),
});

const policyRule = s.object({
  verbs: s.atomicList(),
  apiGroups: s.atomicList(),
  resources: s.atomicList(),
  resourceNames: s.atomicList(),
  nonResourceURLs: s.atomicList(),
});

const roleRef = s.object({ apiGroup: s.string, kind: s.string, name: s.string });

const subject = s.object({ kind: s.string, apiGroup: s.string, name: s.string, namespace: s.string });

const binding = { roleRef, subjects: s.atomicList(subject) };

const envVar = s.object({ name: s.string, value: s.string, valueFrom: s.any });

const containerPort = s.object({ containerPort: s.integer, name: s.string, protocol: s.string, hostPort: s.integer, hostIP: s.string });

const container = s.object(
  {
    name: s.string,
    image: s.string,
    command: s.atomicList(),
    args: s.atomicList(),
    env: s.mergeList(envVar, "name"),
    ports: s.mergeList(containerPort, "containerPort"),
  },
  { preserveUnknown: true },
);

const podSpec = s.object(
  {
    containers: s.mergeList(container, "name"),
    initContainers: s.mergeList(container, "name"),
    volumes: s.mergeList(s.object({ name: s.string }, { preserveUnknown: true }), "name"),
    nodeName: s.string,
    serviceAccountName: s.string,
    restartPolicy: s.string,
  },
  { preserveUnknown: true },
);

const podStatus = s.object({ phase: s.string, reason: s.string, podIP: s.string }, { preserveUnknown: true });

const csrCondition = s.object({
  type: s.string,
  status: s.string,
  reason: s.string,
  message: s.string,
  lastUpdateTime: s.string,
  lastTransitionTime: s.string,
});

/** The fields every top-level kind has, plus its own. */
function kind(role: GroupRole, name: string, fields: Record<string, SchemaNode>): KindSchemaDefinition {
  return { role, kind: name, root: s.object({ apiVersion: s.string, kind: s.string, metadata: objectMeta, ...fields }) };
}

export const KIND_SCHEMAS: readonly KindSchemaDefinition[] = [
  kind("core", "ServiceAccount", {
    automountServiceAccountToken: s.boolean,
    imagePullSecrets: s.atomicList(localObjectReference),
    secrets: s.mergeList(objectReference, "name"),
  }),
  kind("core", "Namespace", {
    spec: s.object({ finalizers: s.atomicList() }),
    status: s.object({ phase: s.string }),
  }),
  kind("core", "Secret", { data: s.map(), stringData: s.map(), type: s.string, immutable: s.boolean }),
  kind("core", "Pod", { spec: podSpec, status: podStatus }),
  kind("core", "Status", {
    metadata: listMeta,
    status: s.string,
    message: s.string,
    reason: s.string,
    details: s.object({
      name: s.string,
      group: s.string,
      kind: s.string,
      uid: s.string,
      causes: s.atomicList(s.object({ reason: s.string, message: s.string, field: s.string })),
      retryAfterSeconds: s.integer,
    }),
    code: s.integer,
  }),
  kind("core", "DeleteOptions", {
    gracePeriodSeconds: s.integer,
    preconditions: s.object({ uid: s.string, resourceVersion: s.string }),
    orphanDependents: s.boolean,
    propagationPolicy: s.string,
    dryRun: s.atomicList(),
    ignoreStoreReadErrorWithClusterBreakingPotential: s.boolean,
  }),
  kind("authentication", "TokenRequest", {
    spec: s.object({
      audiences: s.atomicList(),
      expirationSeconds: s.integer,
      boundObjectRef: s.object({ apiVersion: s.string, kind: s.string, name: s.string, uid: s.string }),
    }),
    status: s.object({ token: s.string, expirationTimestamp: s.string }),
  }),
  kind("authentication", "TokenReview", {
    spec: s.object({ token: s.string, audiences: s.atomicList() }),
    status: s.object({ authenticated: s.boolean, user: userInfo, audiences: s.atomicList(), error: s.string }),
  }),
  kind("authentication", "SelfSubjectReview", { status: s.object({ userInfo }) }),
  kind("authorization", "SubjectAccessReview", {
    spec: s.object({ ...accessAttributes, user: s.string, groups: s.atomicList(), uid: s.string, extra }),
    status: accessReviewStatus,
  }),
  kind("authorization", "SelfSubjectAccessReview", { spec: s.object(accessAttributes), status: accessReviewStatus }),
  kind("certificates", "CertificateSigningRequest", {
    spec: s.object({
      request: s.string,
      signerName: s.string,
      expirationSeconds: s.integer,
      usages: s.atomicList(),
      username: s.string,
      uid: s.string,
      groups: s.atomicList(),
      extra,
    }),
    status: s.object({ conditions: s.mergeList(csrCondition, "type"), certificate: s.string }),
  }),
  kind("certificates", "ClusterTrustBundle", { spec: s.object({ signerName: s.string, trustBundle: s.string }) }),
  kind("rbac", "Role", { rules: s.atomicList(policyRule) }),
  kind("rbac", "ClusterRole", {
    rules: s.atomicList(policyRule),
    aggregationRule: s.object({ clusterRoleSelectors: s.atomicList(labelSelector) }),
  }),
  kind("rbac", "RoleBinding", binding),
  kind("rbac", "ClusterRoleBinding", binding),
  kind("apps", "ControllerRevision", { revision: s.integer, data: s.any }),
  kind("events", "Event", {
    eventTime: s.string,
    series: s.object({ count: s.integer, lastObservedTime: s.string }),
    reportingController: s.string,
    reportingInstance: s.string,
    action: s.string,
    reason: s.string,
    regarding: objectReference,
    related: objectReference,
    note: s.string,
    type: s.string,
    deprecatedSource: s.object({ component: s.string, host: s.string }),
    deprecatedFirstTimestamp: s.string,
    deprecatedLastTimestamp: s.string,
    deprecatedCount: s.integer,
  }),
  kind("coordination", "Lease", {
    spec: s.object({
      holderIdentity: s.string,
      leaseDurationSeconds: s.integer,
      acquireTime: s.string,
      renewTime: s.string,
      leaseTransitions: s.integer,
      strategy: s.string,
      preferredHolder: s.string,
    }),
  }),
];

// Field schemas of the core group: ServiceAccount, Namespace, Secret, ConfigMap, Pod (minimally), and the Status and DeleteOptions messages.
import * as s from "./nodes.js";
import { kind, listMeta, localObjectReference, objectReference, type KindSchemaDefinition } from "./shared.js";

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

const namespaceCondition = s.object(
  {
    type: s.tag(1, s.string("NamespaceContentRemaining, NamespaceFinalizersRemaining or NamespaceDeletionContentFailure.")),
    status: s.tag(2, s.string("True, False or Unknown.")),
    lastTransitionTime: s.tag(4, s.time("Last change of status.")),
    reason: s.tag(5, s.string("Short reason for the condition's last transition.")),
    message: s.tag(6, s.string("Human-readable detail of the last transition.")),
  },
  { required: ["type", "status"] },
);

export const CORE_KINDS: readonly KindSchemaDefinition[] = [
  kind("core", "ServiceAccount", {
    secrets: s.tag(2, s.mapList(objectReference, ["name"], { description: "Secrets in the same namespace that Pods using this account may use; deprecated." })),
    imagePullSecrets: s.tag(3, s.atomicList(localObjectReference, "Secrets in the same namespace used to pull the images of Pods using this account.")),
    automountServiceAccountToken: s.tag(4, s.boolean("Whether Pods running as this account mount an API token automatically; a Pod can override it.")),
  }, { description: "An identity for processes that call the API, with the secrets and tokens it may use." }),
  kind("core", "Namespace", {
    spec: s.tag(
      2,
      s.object(
        { finalizers: s.tag(1, s.atomicList(s.string(), "Values that must be empty before the namespace is removed.")) },
        { description: "The namespace's finalizers." },
      ),
    ),
    status: s.tag(
      3,
      s.object(
        {
          phase: s.tag(1, s.string("Active or Terminating.")),
          conditions: s.tag(2, s.mapList(namespaceCondition, ["type"], { description: "Why a namespace being deleted is not gone yet, one per type." })),
        },
        { description: "The namespace's phase, and the state of its deletion." },
      ),
    ),
  }, { description: "A scope for the names of namespaced objects." }),
  kind("core", "Secret", {
    data: s.tag(2, s.map(s.bytes(), "Secret data, each value base64-encoded.")),
    type: s.tag(3, s.string("Type of the secret, for programmatic handling.")),
    stringData: s.tag(4, s.map(s.string(), "Write-only plain-text data, merged into data on write.")),
    immutable: s.tag(5, s.boolean("Whether data can no longer change.")),
  }, { description: "Sensitive data, such as keys, tokens and certificates, held as base64 values." }),
  kind("core", "ConfigMap", {
    data: s.tag(2, s.map(s.string(), "Configuration data as UTF-8 text.")),
    binaryData: s.tag(3, s.map(s.bytes(), "Binary configuration data, each value base64-encoded; its keys may not repeat data's.")),
    immutable: s.tag(4, s.boolean("Whether data and binaryData can no longer change.")),
  }, { description: "Non-confidential configuration as key-value pairs." }),
  kind("core", "Pod", { spec: podSpec, status: podStatus }, {
    description: "A set of containers; stored and served, for the tokens bound to it, but never run.",
  }),
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
  }, { description: "The result of an operation that returns no object, such as an error or a delete." }),
  kind("core", "DeleteOptions", {
    gracePeriodSeconds: s.int64(),
    preconditions: s.object({ uid: s.string(), resourceVersion: s.string() }),
    orphanDependents: s.boolean(),
    propagationPolicy: s.string(),
    dryRun: s.atomicList(),
    ignoreStoreReadErrorWithClusterBreakingPotential: s.boolean(),
  }, { description: "Options of a delete request." }),
];

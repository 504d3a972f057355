// Field schemas several kinds share: object and list metadata, references, user info, label selectors.
import * as s from "./nodes.js";

const ownerReference = s.object(
  {
    apiVersion: s.tag(5, s.string("API version of the owner.")),
    kind: s.tag(1, s.string("Kind of the owner.")),
    name: s.tag(3, s.string("Name of the owner.")),
    uid: s.tag(4, s.string("UID of the owner.")),
    controller: s.tag(6, s.boolean("Whether this owner is the managing controller.")),
    blockOwnerDeletion: s.tag(7, s.boolean("Whether the owner cannot be deleted from storage before this object is.")),
  },
  { required: ["apiVersion", "kind", "name", "uid"] },
);

const managedFieldsEntry = s.object({
  manager: s.tag(1, s.string("Name of the workflow managing these fields.")),
  operation: s.tag(2, s.string("Operation that made this entry: Apply or Update.")),
  apiVersion: s.tag(3, s.string("Version of the object the field set applies to.")),
  time: s.tag(4, s.time("When the operation happened.")),
  fieldsType: s.tag(6, s.string("Format of the field set; only FieldsV1.")),
  fieldsV1: s.tag(7, s.any("The field set, in the FieldsV1 encoding.")),
  subresource: s.tag(8, s.string("Subresource the entry was written through, if any.")),
});

export const objectMeta = s.object(
  {
    name: s.tag(1, s.string("Unique name within a namespace (or the cluster for cluster-scoped kinds); cannot be updated.")),
    generateName: s.tag(2, s.string("Prefix of a name the server generates when name is empty.")),
    namespace: s.tag(3, s.string("Namespace of the object; empty for cluster-scoped kinds.")),
    selfLink: s.tag(4, s.string("Deprecated; not set by the server.")),
    uid: s.tag(5, s.string("Unique identifier of the object over time; set by the server.")),
    resourceVersion: s.tag(6, s.string("Opaque version of the object, for optimistic concurrency and watches.")),
    generation: s.tag(7, s.int64("Sequence number of a specific generation of the desired state; set by the server.")),
    creationTimestamp: s.tag(8, s.time("When the object was created; set by the server.")),
    deletionTimestamp: s.tag(9, s.time("When the object will be deleted; set by the server when deletion is requested.")),
    deletionGracePeriodSeconds: s.tag(10, s.int64("Seconds allowed for graceful termination before the object is removed.")),
    labels: s.tag(11, s.map(s.string(), "Key/value pairs to organize and select objects.")),
    annotations: s.tag(12, s.map(s.string(), "Key/value pairs of arbitrary metadata, not used for selection.")),
    ownerReferences: s.tag(13, s.mapList(ownerReference, ["uid"], { description: "Objects this object depends on." })),
    finalizers: s.tag(14, s.setList(s.string(), "Entries that must be empty before the object is removed from storage.")),
    managedFields: s.tag(17, s.atomicList(managedFieldsEntry, "Which manager owns which fields of the object.")),
  },
  { description: "Standard object metadata." },
);

export const listMeta = s.object(
  {
    selfLink: s.string("Deprecated; not set by the server."),
    resourceVersion: s.string("Version of the list, to watch from."),
    continue: s.string("Token to ask for the next page of a paged list."),
    remainingItemCount: s.int64("Items left after this page, when known."),
  },
  { description: "Standard list metadata." },
);

export const objectReference = s.object({
  apiVersion: s.tag(5, s.string("API version of the referent.")),
  kind: s.tag(1, s.string("Kind of the referent.")),
  namespace: s.tag(2, s.string("Namespace of the referent.")),
  name: s.tag(3, s.string("Name of the referent.")),
  uid: s.tag(4, s.string("UID of the referent.")),
  resourceVersion: s.tag(6, s.string("Resource version the reference was made at.")),
  fieldPath: s.tag(7, s.string("A field within the referent, e.g. spec.containers{name}.")),
});

export const localObjectReference = s.object({ name: s.tag(1, s.string("Name of the referent in the same namespace.")) });

/** map[string][]string, as in UserInfo.extra. */
export const extra = s.map(s.atomicList(), "Extra attributes of the user, set by the authenticator.");

export const userInfo = s.object({
  username: s.tag(1, s.string("Name that uniquely identifies this user among all active users.")),
  uid: s.tag(2, s.string("Identifier of the user, unique over time.")),
  groups: s.tag(3, s.atomicList(s.string(), "Groups the user is a member of.")),
  extra: s.tag(4, extra),
});

const labelSelectorRequirement = s.object(
  {
    key: s.string("The label key the selector applies to."),
    operator: s.string("In, NotIn, Exists or DoesNotExist."),
    values: s.atomicList(s.string(), "Values for In and NotIn; empty for Exists and DoesNotExist."),
  },
  { required: ["key", "operator"] },
);

export const labelSelector = s.object({
  matchLabels: s.tag(1, s.map(s.string(), "Labels an object must carry, each an In requirement of one value.")),
  matchExpressions: s.atomicList(labelSelectorRequirement, "Label requirements, all of which must hold."),
});

/** A group by its role; "core" is the empty group, "apps" is fixed, the rest derive from the suffix. */
export type GroupRole = "core" | "apps" | "certificates" | "authentication" | "authorization" | "rbac" | "events" | "coordination";

export interface KindSchemaDefinition {
  readonly role: GroupRole;
  readonly kind: string;
  readonly root: s.ObjectNode;
}

/** The fields every top-level object carries, the registry's and the HTTP layer's rather than a kind's own rules'. */
export const ENVELOPE_FIELDS: readonly string[] = ["apiVersion", "kind", "metadata"];

/** A kind: the envelope fields, plus its own. */
export function kind(role: GroupRole, name: string, fields: Record<string, s.SchemaNode>, options: s.ObjectOptions = {}): KindSchemaDefinition {
  const root = s.object(
    {
      apiVersion: s.string("Versioned schema of this representation of the object."),
      kind: s.string("REST resource this object represents."),
      // Field 1 of every kind's protobuf message (apiVersion and kind travel in the envelope).
      metadata: s.tag(1, objectMeta),
      ...fields,
    },
    options,
  );
  return { role, kind: name, root };
}

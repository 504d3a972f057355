// Object metadata shapes shared by every resource (ObjectMeta, ListMeta, Status, UserInfo, Table).

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: "Apply" | "Update";
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: unknown;
  subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: ManagedFieldsEntry[];
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** Any API object as it travels: apiVersion, kind, metadata, and the kind's own fields. */
export interface ApiObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ApiList<T extends ApiObject = ApiObject> {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: T[];
}

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** The seed-style Status object every error (and some deletes) answers with. */
export interface Status {
  apiVersion: "v1";
  kind: "Status";
  metadata: ListMeta;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: { name?: string; group?: string; kind?: string; uid?: string; causes?: StatusCause[]; retryAfterSeconds?: number };
  code: number;
}

export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface TableColumnDefinition {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  format?: string;
  description?: string;
  /** 0 = shown by default; >0 = only with -o wide. */
  priority: number;
}

/** PATCH request content types, by the patch type names kubectl uses (`--type`). */
export const PATCH_CONTENT_TYPES = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
} as const;

/** MicroTime as the API writes it: RFC 3339 in UTC with six fractional digits. */
export function formatMicroTime(date: Date): string {
  // toISOString always ends in `.sssZ`: three more digits before the Z (a string splice, not a regex: audit calls this
  // twice per request).
  return `${date.toISOString().slice(0, -1)}000Z`;
}

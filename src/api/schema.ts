// Field schema of every served kind, keyed by (group, kind) with groups resolved from the configured suffix.
import { groupNames, type GroupNames } from "./group.js";
import { KIND_SCHEMAS } from "./schema/kinds.js";
import type { ObjectNode } from "./schema/nodes.js";
import type { GroupRole } from "./schema/shared.js";

export type { GroupRole, KindSchemaDefinition } from "./schema/shared.js";
export { ENVELOPE_FIELDS } from "./schema/shared.js";
export type { AnyNode, ListNode, ListPatchMeta, ListType, MapNode, ObjectNode, ScalarFormat, ScalarNode, ScalarType, SchemaNode } from "./schema/nodes.js";
export { childNode, listPatchMeta } from "./schema/nodes.js";
export { findUnknownFields, inspectFields, pruneUnknown, type FieldIssues, type FieldTypeMismatch } from "./schema/unknown-fields.js";
export { walkFields, type FieldVisitor, type JsonType, type Parent } from "./schema/walk.js";
export { findDuplicateKeys } from "./schema/duplicate-keys.js";
export { listMeta } from "./schema/shared.js";
export { SHARED_TYPE_NAMES, type SharedTypeName, type TypePackage } from "./schema/type-names.js";

export interface KindKey {
  /** "" for the core group. */
  readonly group: string;
  readonly kind: string;
}

export interface SchemaRegistry {
  readonly names: GroupNames;
  /** The root schema of a kind, or undefined when the server holds none for it. */
  lookup(group: string, kind: string): ObjectNode | undefined;
  /** The root schema for an object's own `apiVersion` (`v1`, `group/version`) and `kind`. */
  forObject(obj: { readonly apiVersion?: unknown; readonly kind?: unknown }): ObjectNode | undefined;
  /** Every (group, kind) that has a schema. */
  kinds(): readonly KindKey[];
}

/** The group a role stands for under `names`. */
export function resolveGroupRole(role: GroupRole, names: GroupNames): string {
  return role === "core" ? "" : names[role];
}

/** Splits an apiVersion into its group ("" for the core `v1`). */
export function groupOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.indexOf("/");
  return slash < 0 ? "" : apiVersion.slice(0, slash);
}

const registries = new Map<string, SchemaRegistry>();

/** The schema registry for one group suffix (built once per suffix; the schema is immutable). */
export function schemaRegistry(names: GroupNames = groupNames()): SchemaRegistry {
  const cached = registries.get(names.suffix);
  if (cached !== undefined) return cached;
  const byKey = new Map<string, ObjectNode>();
  const kinds: KindKey[] = [];
  for (const def of KIND_SCHEMAS) {
    const group = resolveGroupRole(def.role, names);
    byKey.set(`${group}/${def.kind}`, def.root);
    kinds.push({ group, kind: def.kind });
  }
  const lookup = (group: string, kind: string): ObjectNode | undefined => byKey.get(`${group}/${kind}`);
  const registry: SchemaRegistry = {
    names,
    lookup,
    forObject: (obj) =>
      typeof obj.apiVersion === "string" && typeof obj.kind === "string" ? lookup(groupOfApiVersion(obj.apiVersion), obj.kind) : undefined,
    kinds: () => kinds,
  };
  registries.set(names.suffix, registry);
  return registry;
}

/**
 * The root schema of a kind; `role` picks among kinds of the same name (core and events both have an Event, and the
 * name alone gives the first listed); throws for an unknown kind.
 */
export function kindSchema(kind: string, role?: GroupRole): ObjectNode {
  const root = KIND_SCHEMAS.find((def) => def.kind === kind && (role === undefined || def.role === role))?.root;
  if (root === undefined) throw new Error(`no field schema for kind ${kind}`);
  return root;
}

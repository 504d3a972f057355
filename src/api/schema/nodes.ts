// Field-schema node types, the builders kinds are written with, and the lookups patching and validation share.

export type ScalarType = "string" | "integer" | "number" | "boolean";

export interface ScalarNode {
  readonly type: ScalarType;
}

/** A struct: known fields only, unless `preserveUnknown` lets other fields through unchecked. */
export interface ObjectNode {
  readonly type: "object";
  readonly fields: Readonly<Record<string, SchemaNode>>;
  readonly preserveUnknown?: boolean;
}

/** A map with free-form keys (labels, annotations, Secret data, `extra`). */
export interface MapNode {
  readonly type: "map";
  readonly values: SchemaNode;
}

/**
 * A list. `atomic` lists are replaced whole by a strategic merge patch; `merge` lists merge element-wise by
 * `mergeKey` (lists of objects) or as a set (lists of scalars, no `mergeKey`).
 */
export interface ListNode {
  readonly type: "list";
  readonly items: SchemaNode;
  readonly strategy: "atomic" | "merge";
  readonly mergeKey?: string;
}

/** Arbitrary JSON (RawExtension, managedFields.fieldsV1): nothing below it is checked. */
export interface AnyNode {
  readonly type: "any";
}

export type SchemaNode = ScalarNode | ObjectNode | MapNode | ListNode | AnyNode;

export const string: ScalarNode = { type: "string" };
export const integer: ScalarNode = { type: "integer" };
export const number: ScalarNode = { type: "number" };
export const boolean: ScalarNode = { type: "boolean" };
export const any: AnyNode = { type: "any" };

export function object(fields: Record<string, SchemaNode>, options: { preserveUnknown?: boolean } = {}): ObjectNode {
  return options.preserveUnknown ? { type: "object", fields, preserveUnknown: true } : { type: "object", fields };
}

export function map(values: SchemaNode = string): MapNode {
  return { type: "map", values };
}

export function atomicList(items: SchemaNode = string): ListNode {
  return { type: "list", items, strategy: "atomic" };
}

export function mergeList(items: ObjectNode, mergeKey: string): ListNode {
  return { type: "list", items, strategy: "merge", mergeKey };
}

/** A list of scalars merged as a set (metadata.finalizers). */
export function setList(items: ScalarNode = string): ListNode {
  return { type: "list", items, strategy: "merge" };
}

/** The schema of `key` inside a map-shaped value described by `node`; undefined when nothing is known. */
export function childNode(node: SchemaNode | undefined, key: string): SchemaNode | undefined {
  if (node === undefined) return undefined;
  if (node.type === "object") return Object.hasOwn(node.fields, key) ? node.fields[key] : undefined;
  if (node.type === "map") return node.values;
  return undefined;
}

export interface ListPatchMeta {
  readonly strategy: "atomic" | "merge";
  /** "" for atomic lists and for lists of scalars merged as sets. */
  readonly mergeKey: string;
  readonly items: SchemaNode | undefined;
}

/** How a strategic merge patch treats the list described by `node`: lists without schema are atomic. */
export function listPatchMeta(node: SchemaNode | undefined): ListPatchMeta {
  if (node?.type !== "list") return { strategy: "atomic", mergeKey: "", items: undefined };
  return { strategy: node.strategy, mergeKey: node.strategy === "merge" ? (node.mergeKey ?? "") : "", items: node.items };
}

// Field-schema node types, the builders kinds are written with, and the lookups patching and validation share.

export type ScalarType = "string" | "integer" | "number" | "boolean";

/** OpenAPI formats: sized integers, RFC 3339 times (Time and MicroTime), base64 of `[]byte`. */
export type ScalarFormat = "int32" | "int64" | "date-time" | "byte";

interface Described {
  /** One line, as `kubectl explain` prints it. */
  readonly description?: string;
  /** The field's number in upstream's generated.proto, where protobuf bodies of the kind are accepted. */
  readonly protobuf?: number;
}

export interface ScalarNode extends Described {
  readonly type: ScalarType;
  readonly format?: ScalarFormat;
}

/** A struct: known fields only, unless `preserveUnknown` lets other fields through unchecked. */
export interface ObjectNode extends Described {
  readonly type: "object";
  readonly fields: Readonly<Record<string, SchemaNode>>;
  /** Fields upstream marks required (empty when none): published, not enforced here (the rules say "Required value"). */
  readonly required: readonly string[];
  readonly preserveUnknown?: boolean;
}

/** A map with free-form keys (labels, annotations, Secret data, `extra`). */
export interface MapNode extends Described {
  readonly type: "map";
  readonly values: SchemaNode;
}

/** `x-kubernetes-list-type`: replaced whole, a set of scalars, or a map of objects keyed by `mapKeys`. */
export type ListType = "atomic" | "set" | "map";

/**
 * A list, with its server-side-apply semantics (`listType`, `mapKeys`) and its strategic-merge-patch ones
 * (`patchStrategy`, `patchMergeKey`); they agree but for lists keyed by several fields (container ports).
 */
export interface ListNode extends Described {
  readonly type: "list";
  readonly items: SchemaNode;
  readonly listType: ListType;
  readonly mapKeys?: readonly string[];
  /** Absent: a strategic merge patch replaces the list. */
  readonly patchStrategy?: "merge" | "merge,retainKeys";
  readonly patchMergeKey?: string;
}

/** Arbitrary JSON (RawExtension, managedFields.fieldsV1): nothing below it is checked. */
export interface AnyNode extends Described {
  readonly type: "any";
}

export type SchemaNode = ScalarNode | ObjectNode | MapNode | ListNode | AnyNode;

const scalar = (type: ScalarType, format?: ScalarFormat) => (description?: string): ScalarNode => ({
  type,
  ...(format ? { format } : {}),
  ...(description ? { description } : {}),
});

export const string = scalar("string");
/** `[]byte`: base64 text in JSON (the rules decode it, with messages that name the content). */
export const bytes = scalar("string", "byte");
/** `Time` and `MicroTime`: RFC 3339 text. */
export const time = scalar("string", "date-time");
export const int32 = scalar("integer", "int32");
export const int64 = scalar("integer", "int64");
export const boolean = scalar("boolean");
export const any = (description?: string): AnyNode => ({ type: "any", ...(description ? { description } : {}) });

/** `node` with its description for one place it is used (shared nodes carry none of their own). */
export function describe<T extends SchemaNode>(node: T, description: string): T {
  return { ...node, description };
}

/** `node` as field number `n` of its message in upstream's generated.proto. */
export function tag<T extends SchemaNode>(n: number, node: T): T {
  return { ...node, protobuf: n };
}

export interface ObjectOptions {
  readonly required?: readonly string[];
  readonly preserveUnknown?: boolean;
  readonly description?: string;
}

export function object(fields: Record<string, SchemaNode>, options: ObjectOptions = {}): ObjectNode {
  const required = options.required ?? [];
  for (const name of required) if (!Object.hasOwn(fields, name)) throw new Error(`required field ${name} is not a field`);
  return {
    type: "object",
    fields,
    required,
    ...(options.preserveUnknown ? { preserveUnknown: true } : {}),
    ...(options.description ? { description: options.description } : {}),
  };
}

export function map(values: SchemaNode = string(), description?: string): MapNode {
  return { type: "map", values, ...(description ? { description } : {}) };
}

export function atomicList(items: SchemaNode = string(), description?: string): ListNode {
  return { type: "list", items, listType: "atomic", ...(description ? { description } : {}) };
}

/** A list of scalars merged as a set (metadata.finalizers). */
export function setList(items: ScalarNode = string(), description?: string): ListNode {
  return { type: "list", items, listType: "set", patchStrategy: "merge", ...(description ? { description } : {}) };
}

export interface MapListOptions {
  /** The strategic merge key when `keys` has several (upstream keys ports by containerPort alone). */
  readonly patchMergeKey?: string;
  /** `merge,retainKeys` (volumes): a patch may name the keys its element keeps. */
  readonly retainKeys?: boolean;
  readonly description?: string;
}

/** A list of objects merged element-wise by `keys`, by server-side apply and by strategic merge patch alike. */
export function mapList(items: ObjectNode, keys: readonly string[], options: MapListOptions = {}): ListNode {
  for (const k of keys) if (!Object.hasOwn(items.fields, k)) throw new Error(`list map key ${k} is not a field`);
  const patchMergeKey = options.patchMergeKey ?? (keys.length === 1 ? keys[0] : undefined);
  if (patchMergeKey === undefined) throw new Error(`a list keyed by ${keys.join(", ")} needs its patch merge key`);
  return {
    type: "list",
    items,
    listType: "map",
    mapKeys: keys,
    patchStrategy: options.retainKeys ? "merge,retainKeys" : "merge",
    patchMergeKey,
    ...(options.description ? { description: options.description } : {}),
  };
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
  const merge = node.patchStrategy !== undefined;
  return { strategy: merge ? "merge" : "atomic", mergeKey: merge ? (node.patchMergeKey ?? "") : "", items: node.items };
}

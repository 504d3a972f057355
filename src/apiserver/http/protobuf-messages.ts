// Field tables of the protobuf messages kubectl's typed clients send, by kind, derived from the field schema's
// protobuf field numbers (upstream's generated.proto); runtime and meta messages that are no kind's fields are here.
//
// Only request bodies are decoded (answers are JSON), so a table lists the fields a client can send; fields without a
// number are skipped on the wire like any unknown field. A kind is accepted when its own fields carry numbers.
import { kindSchema, schemaRegistry, type ObjectNode, type SchemaNode } from "../../api/schema.js";

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

// --- meta/v1 and runtime ---

export const TIME: Desc = { 1: f("seconds", "int"), 2: f("nanos", "int") };
export const TYPE_META: Desc = { 1: f("apiVersion", "string"), 2: f("kind", "string") };
/** runtime.Unknown: the envelope after the `k8s\0` prefix. */
export const UNKNOWN: Desc = { 1: f("typeMeta", msg(TYPE_META)), 2: f("raw", "bytes"), 3: f("contentEncoding", "string"), 4: f("contentType", "string") };
/** RawExtension and FieldsV1 (`any` in the schema): raw JSON bytes. */
const RAW: Desc = { 1: f("Raw", "bytes") };

// --- kinds, from the field schema ---

function kindOf(node: SchemaNode): Kind {
  switch (node.type) {
    case "string":
      return node.format === "byte" ? "bytes" : node.format === "date-time" ? "time" : "string";
    case "integer":
    case "number":
      return "int";
    case "boolean":
      return "bool";
    case "object":
      return msg(messageOf(node));
    case "any":
      return msg(RAW);
    case "list":
      return kindOf(node.items);
    case "map":
      // map[string][]string (UserInfo.extra) holds ExtraValue messages.
      return { map: node.values.type === "list" ? "stringList" : (kindOf(node.values) as Scalar) };
  }
}

/** The message of an object node: its numbered fields (lists are repeated fields). */
function messageOf(node: ObjectNode): Desc {
  const desc: Record<number, Field> = {};
  for (const [name, child] of Object.entries(node.fields)) {
    if (child.protobuf !== undefined) desc[child.protobuf] = f(name, kindOf(child), child.type === "list");
  }
  return desc;
}

/** Messages by kind, in name order; the group is whatever the endpoint serves (checked by the registry like any body). */
export const MESSAGES: Readonly<Record<string, Desc>> = Object.fromEntries(
  schemaRegistry()
    .kinds()
    .map(({ kind }) => [kind, messageOf(kindSchema(kind))] as const)
    // Every kind numbers its metadata; accepted kinds number their own fields too.
    .filter(([, desc]) => Object.keys(desc).length > 1)
    .sort(([a], [b]) => (a < b ? -1 : 1)),
);

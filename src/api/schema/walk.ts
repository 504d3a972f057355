// The one walk of a JSON value along a field schema, which every type check, unknown-field check and cleanup reads.
import type { ScalarNode, SchemaNode } from "./nodes.js";

export type JsonType = "string" | "number" | "boolean" | "object" | "list";

/** Where a visited value sits: the object or list holding it and its key there (none for the root). */
export type Parent = Record<string, unknown> | unknown[] | undefined;

/**
 * What a walk reports. Paths read `spec.usages[0]`, `data[tls.crt]` (map entries) and `""` for the root. Callbacks
 * may delete the visited entry from its parent.
 */
export interface FieldVisitor {
  /** A field the schema does not know (and no `preserveUnknown` object holds); nothing below it is walked. */
  unknown?(path: string, value: unknown, parent: Parent, key: string | number): void;
  /** A value of another JSON type than `node` wants (a fraction for an integer counts); nothing below it is walked. */
  mismatch?(path: string, value: unknown, node: SchemaNode, got: JsonType): void;
  /** A scalar of the JSON type `node` wants; its format (range, time) is the visitor's to check. */
  scalar?(path: string, value: string | number | boolean, node: ScalarNode): void;
  /** A null field, map entry or list item: absent for fields and entries, as decoding treats it. */
  null?(path: string, parent: Parent, key: string | number): void;
}

export function jsonType(value: unknown): JsonType {
  if (Array.isArray(value)) return "list";
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

/** Walks `value` along `node`; nothing below an `any` node, an unknown field or a mismatch is visited. */
export function walkFields(value: unknown, node: SchemaNode, visitor: FieldVisitor, path = ""): void {
  visit(value, node, visitor, path, undefined, "");
}

function visit(value: unknown, node: SchemaNode, v: FieldVisitor, path: string, parent: Parent, key: string | number): void {
  if (value === null) return v.null?.(path, parent, key);
  if (node.type === "any") return;
  const got = jsonType(value);
  switch (node.type) {
    case "object": {
      if (got !== "object") return v.mismatch?.(path, value, node, got);
      const obj = value as Record<string, unknown>;
      for (const [k, child] of Object.entries(obj)) {
        const at = path === "" ? k : `${path}.${k}`;
        if (Object.hasOwn(node.fields, k)) visit(child, node.fields[k]!, v, at, obj, k);
        else if (!node.preserveUnknown) v.unknown?.(at, child, obj, k);
      }
      return;
    }
    case "map": {
      if (got !== "object") return v.mismatch?.(path, value, node, got);
      const obj = value as Record<string, unknown>;
      for (const [k, child] of Object.entries(obj)) visit(child, node.values, v, `${path}[${k}]`, obj, k);
      return;
    }
    case "list":
      if (got !== "list") return v.mismatch?.(path, value, node, got);
      (value as unknown[]).forEach((item, i, list) => visit(item, node.items, v, `${path}[${i}]`, list, i));
      return;
    case "integer":
      if (got !== "number" || !Number.isInteger(value)) return v.mismatch?.(path, value, node, got);
      return v.scalar?.(path, value as number, node);
    default:
      if (got !== node.type) return v.mismatch?.(path, value, node, got);
      return v.scalar?.(path, value as string | number | boolean, node);
  }
}

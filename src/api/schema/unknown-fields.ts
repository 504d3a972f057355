// Unknown-field and wrong-JSON-type detection against a field schema, for fieldValidation=Strict|Warn.
import type { SchemaNode } from "./nodes.js";
import { walkFields, type JsonType } from "./walk.js";

export interface FieldTypeMismatch {
  /** Path like `spec.expirationSeconds` or `spec.containers[0].name`. */
  readonly path: string;
  readonly expected: "string" | "integer" | "number" | "boolean" | "object" | "list" | "map";
  readonly got: JsonType;
}

export interface FieldIssues {
  /** Paths of fields the schema does not know, in document order. */
  readonly unknown: string[];
  readonly wrongType: FieldTypeMismatch[];
}

/**
 * Walks `value` along `node`. `null` is accepted anywhere (it decodes to the zero value); nothing below
 * an unknown field, a `preserveUnknown` extra field or an `any` node is examined.
 */
export function inspectFields(value: unknown, node: SchemaNode): FieldIssues {
  const issues: FieldIssues = { unknown: [], wrongType: [] };
  walkFields(value, node, {
    unknown: (path) => issues.unknown.push(path),
    // `any` nodes are never reported as mismatched.
    mismatch: (path, _value, expected, got) => issues.wrongType.push({ path, expected: expected.type as FieldTypeMismatch["expected"], got }),
  });
  return issues;
}

/** The unknown-field paths of `value`, e.g. `["spec.foo", "metadata.labelz"]`. */
export function findUnknownFields(value: unknown, node: SchemaNode): string[] {
  return inspectFields(value, node).unknown;
}

/** Removes, in place, the fields of `value` that the schema does not know (fieldValidation=Ignore and Warn). */
export function pruneUnknown(value: unknown, node: SchemaNode): void {
  walkFields(value, node, {
    unknown: (_path, _value, parent, key) => {
      if (parent !== undefined && !Array.isArray(parent)) delete parent[key as string];
    },
  });
}

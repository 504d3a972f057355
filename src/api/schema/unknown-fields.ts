// Unknown-field and wrong-type detection against a field schema, for fieldValidation=Strict|Warn.
import type { SchemaNode } from "./nodes.js";

export interface FieldTypeMismatch {
  /** Path like `spec.expirationSeconds` or `spec.containers[0].name`. */
  readonly path: string;
  readonly expected: "string" | "integer" | "number" | "boolean" | "object" | "list" | "map";
  readonly got: "string" | "number" | "boolean" | "object" | "list";
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
  walk(value, node, "", issues);
  return issues;
}

/** The unknown-field paths of `value`, e.g. `["spec.foo", "metadata.labelz"]`. */
export function findUnknownFields(value: unknown, node: SchemaNode): string[] {
  return inspectFields(value, node).unknown;
}

function walk(value: unknown, node: SchemaNode, path: string, issues: FieldIssues): void {
  if (value === null || node.type === "any") return;
  const got = jsonType(value);
  switch (node.type) {
    case "object":
      if (got !== "object") return mismatch(issues, path, "object", got);
      for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
        const field = join(path, key);
        if (Object.hasOwn(node.fields, key)) walk(child, node.fields[key]!, field, issues);
        else if (!node.preserveUnknown) issues.unknown.push(field);
      }
      return;
    case "map":
      if (got !== "object") return mismatch(issues, path, "map", got);
      for (const [key, child] of Object.entries(value as Record<string, unknown>)) walk(child, node.values, `${path}[${key}]`, issues);
      return;
    case "list":
      if (got !== "list") return mismatch(issues, path, "list", got);
      (value as unknown[]).forEach((item, i) => walk(item, node.items, `${path}[${i}]`, issues));
      return;
    case "integer":
      if (got !== "number" || !Number.isInteger(value)) return mismatch(issues, path, "integer", got);
      return;
    default:
      if (got !== node.type) return mismatch(issues, path, node.type, got);
  }
}

function mismatch(issues: FieldIssues, path: string, expected: FieldTypeMismatch["expected"], got: FieldTypeMismatch["got"]): void {
  issues.wrongType.push({ path, expected, got });
}

function jsonType(value: unknown): FieldTypeMismatch["got"] {
  if (Array.isArray(value)) return "list";
  const t = typeof value;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

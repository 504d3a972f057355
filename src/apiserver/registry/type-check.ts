// Type checks of a kind's own fields against its field schema (what decoding into typed structs refuses upstream), and null cleanup.
import { ENVELOPE_FIELDS, walkFields, type ObjectNode, type ScalarNode, type SchemaNode } from "../../api/schema.js";
import type { FieldError } from "./strategy.js";
import { invalid, isRfc3339, typeInvalid } from "./validation.js";

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** The type a message names for `node`, as upstream's decoder calls it. */
function typeName(node: SchemaNode): string {
  switch (node.type) {
    case "list":
      return "array";
    case "map":
    case "object":
      return "object";
    case "integer":
      return node.format ?? "integer";
    case "string":
      return node.format === "date-time" ? "string (RFC 3339 time)" : "string";
    default:
      return node.type;
  }
}

function formatError(path: () => string, value: string | number | boolean, node: ScalarNode): FieldError | undefined {
  switch (node.format) {
    case "int32":
      return (value as number) < INT32_MIN || (value as number) > INT32_MAX ? invalid(path(), value, "must fit in a 32-bit integer") : undefined;
    case "int64":
      return Number.isSafeInteger(value) ? undefined : typeInvalid(path(), value, "int64");
    case "date-time":
      return isRfc3339(value as string) ? undefined : invalid(path(), value, "must be an RFC 3339 time such as 2006-01-02T15:04:05Z");
    default:
      return undefined;
  }
}

/**
 * Type errors of `value` against `node`, paths under `path`. JSON null counts as absent (as decoding leaves a Go
 * field unset) but not as a list item; unknown fields are not looked at (fieldValidation's job).
 */
export function typeErrors(value: unknown, node: SchemaNode, path = ""): FieldError[] {
  const errors: FieldError[] = [];
  walkFields(
    value,
    node,
    {
      mismatch: (at, v, expected) => errors.push(typeInvalid(at, v, typeName(expected))),
      scalar(at, v, scalar) {
        const error = formatError(at, v, scalar);
        if (error) errors.push(error);
      },
      null: (at, parent) => {
        if (Array.isArray(parent)) errors.push(invalid(at, null, "must not be null"));
      },
    },
    path,
  );
  return errors;
}

/** Deletes null-valued known fields and map entries, so later code sees absent fields only (raw `any` data is left alone). */
export function dropNulls(value: unknown, node: SchemaNode): void {
  walkFields(value, node, {
    null: (_at, parent, key) => {
      if (parent !== undefined && !Array.isArray(parent)) delete parent[key as string];
    },
  });
}

/** A kind's root schema without the envelope (apiVersion, kind, metadata), which the registry checks itself. */
export function ownFields(root: ObjectNode): ObjectNode {
  const fields = Object.fromEntries(Object.entries(root.fields).filter(([name]) => !ENVELOPE_FIELDS.includes(name)));
  return { ...root, fields, required: root.required.filter((name) => !ENVELOPE_FIELDS.includes(name)) };
}

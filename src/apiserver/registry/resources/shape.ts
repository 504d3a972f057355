// JSON type checks of known fields (what decoding into typed structs refuses upstream), and null-as-absent cleanup.
import type { FieldError } from "../strategy.js";
import { child, index, invalid, isRfc3339, key, typeInvalid } from "../validation.js";

export type Scalar = "string" | "boolean" | "int32" | "int64" | "time" | "any";

/** The JSON shape of a field: a scalar, a list, a string-keyed map, or an object of known fields. */
export type Shape = Scalar | { readonly list: Shape } | { readonly map: Shape } | { readonly fields: Readonly<Record<string, Shape>> };

export const listOf = (item: Shape): Shape => ({ list: item });
export const mapOf = (value: Shape): Shape => ({ map: value });
export const fields = (known: Readonly<Record<string, Shape>>): Shape => ({ fields: known });

export const STRING_LIST = listOf("string");
/** map[string][]string, as `extra` of a user. */
export const EXTRA = mapOf(STRING_LIST);
export const STRING_MAP = mapOf("string");
export const OBJECT_REFERENCE = fields({
  apiVersion: "string",
  kind: "string",
  namespace: "string",
  name: "string",
  uid: "string",
  resourceVersion: "string",
  fieldPath: "string",
});
export const LOCAL_OBJECT_REFERENCE = fields({ name: "string" });

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function scalarErrors(value: unknown, type: Scalar, path: string): FieldError[] {
  switch (type) {
    case "any":
      return [];
    case "string":
      return typeof value === "string" ? [] : [typeInvalid(path, value, "string")];
    case "boolean":
      return typeof value === "boolean" ? [] : [typeInvalid(path, value, "boolean")];
    case "int32":
      if (typeof value !== "number" || !Number.isInteger(value)) return [typeInvalid(path, value, "int32")];
      return value < INT32_MIN || value > INT32_MAX ? [invalid(path, value, "must fit in a 32-bit integer")] : [];
    case "int64":
      return typeof value === "number" && Number.isSafeInteger(value) ? [] : [typeInvalid(path, value, "int64")];
    case "time":
      if (typeof value !== "string") return [typeInvalid(path, value, "string (RFC 3339 time)")];
      return isRfc3339(value) ? [] : [invalid(path, value, "must be an RFC 3339 time such as 2006-01-02T15:04:05Z")];
  }
}

/**
 * Type errors of `value` against `shape` at `path`. JSON null counts as absent (as decoding leaves a Go field
 * unset); unknown fields are not looked at.
 */
export function checkShape(value: unknown, shape: Shape, path: string): FieldError[] {
  if (value === null || value === undefined) return [];
  if (typeof shape === "string") return scalarErrors(value, shape, path);
  if ("list" in shape) {
    if (!Array.isArray(value)) return [typeInvalid(path, value, "array")];
    return value.flatMap((item, i) => (item === null ? [invalid(index(path, i), null, "must not be null")] : checkShape(item, shape.list, index(path, i))));
  }
  if (!isRecord(value)) return [typeInvalid(path, value, "object")];
  if ("map" in shape) return Object.entries(value).flatMap(([k, v]) => checkShape(v, shape.map, key(path, k)));
  return Object.entries(shape.fields).flatMap(([name, s]) => checkShape(value[name], s, child(path, name)));
}

/** Deletes null-valued known fields and map entries, so later code sees absent fields only (raw `any` data is left alone). */
export function dropNulls(value: unknown, shape: Shape): void {
  if (typeof shape === "string" || value === null || typeof value !== "object") return;
  if ("list" in shape) {
    if (Array.isArray(value)) for (const item of value) dropNulls(item, shape.list);
    return;
  }
  if (!isRecord(value)) return;
  const entries = "map" in shape ? Object.keys(value).map((k) => [k, shape.map] as const) : Object.entries(shape.fields);
  for (const [name, s] of entries) {
    if (value[name] === null) delete value[name];
    else dropNulls(value[name], s);
  }
}

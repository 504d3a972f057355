// fieldValidation=Ignore|Warn|Strict: unknown and duplicate fields are refused, warned about or dropped; unknown ones never stored.
import { findDuplicateKeys, inspectFields, pruneUnknown, type SchemaNode } from "../../api/schema.js";
import { PlatformError } from "../../errors.js";
import type { FieldValidation } from "./query.js";

/**
 * Checks a decoded body against its kind's schema. Returns the warnings to send (Warn); throws BAD_REQUEST
 * for wrong JSON types always and for unknown/duplicate fields under Strict. Unknown fields are dropped.
 * `json` is the raw JSON body when there is one (duplicate keys are only visible there), with `decoded` when `body`
 * is exactly what JSON.parse made of it (then a key count usually settles that no key repeats).
 */
export function checkFields(body: unknown, schema: SchemaNode | undefined, mode: FieldValidation, json?: { readonly text: string; readonly decoded?: unknown }): string[] {
  if (schema === undefined || body === null || typeof body !== "object" || Array.isArray(body)) return [];
  const issues = inspectFields(body, schema);
  if (issues.wrongType.length > 0) {
    const list = issues.wrongType.map((m) => `${m.path || "<root>"}: expected ${m.expected}, got ${m.got}`);
    throw new PlatformError("BAD_REQUEST", `the request body has fields of the wrong type: ${list.join("; ")}`, {
      causes: issues.wrongType.map((m) => ({ reason: "FieldValueTypeInvalid", field: m.path, message: `expected ${m.expected}, got ${m.got}` })),
    });
  }
  // The walk above found every unknown field: with none, nothing is pruned and no second walk is made (one of the four
  // or five schema walks of a write, ~1% of the server's thread in a burst; clients rarely send unknown fields).
  const prune = () => issues.unknown.length > 0 && pruneUnknown(body, schema);
  if (mode === "Ignore") {
    prune();
    return [];
  }
  const problems = [
    ...issues.unknown.map((p) => `unknown field ${JSON.stringify(p)}`),
    ...(json !== undefined ? findDuplicateKeys(json.text, json.decoded).map((p) => `duplicate field ${JSON.stringify(p)}`) : []),
  ];
  if (problems.length > 0 && mode === "Strict") {
    throw new PlatformError("BAD_REQUEST", `strict decoding error: ${problems.join(", ")}`, {
      causes: problems.map((message) => ({ reason: "FieldValueInvalid", message })),
    });
  }
  prune();
  return problems;
}

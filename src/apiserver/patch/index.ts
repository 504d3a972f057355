// PATCH bodies by content type: JSON patch, JSON merge patch or strategic merge patch, always yielding an object.
import { findDuplicateKeys, type SchemaNode } from "../../api/schema.js";
import { PlatformError } from "../../errors.js";
import { applyJsonPatch } from "./json.js";
import { guardDepth, isJsonObject, patchInvalid, type JsonObject } from "./json-value.js";
import { applyMergePatch } from "./merge.js";
import { applyStrategicMergePatch } from "./strategic.js";

export { applyJsonPatch, MAX_JSON_PATCH_OPERATIONS, type JsonPatchOptions } from "./json.js";
export { applyMergePatch } from "./merge.js";
export { applyStrategicMergePatch } from "./strategic.js";
export type { JsonObject } from "./json-value.js";

import { PATCH_CONTENT_TYPES } from "../../api/meta.js";

export { PATCH_CONTENT_TYPES };

export type PatchType = keyof typeof PATCH_CONTENT_TYPES;

/** The patch type of a request `Content-Type` (parameters ignored); anything else is UNSUPPORTED_MEDIA_TYPE. */
export function patchTypeOf(contentType: string | undefined): PatchType {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  for (const [type, media] of Object.entries(PATCH_CONTENT_TYPES)) if (media === mediaType) return type as PatchType;
  throw new PlatformError(
    "UNSUPPORTED_MEDIA_TYPE",
    `the body of the request was in an unknown format ${JSON.stringify(mediaType)} - accepted media types include: ${Object.values(PATCH_CONTENT_TYPES).join(", ")}`,
  );
}

export interface ApplyPatchOptions {
  /** Root schema of the object's kind; strategic merge patch is refused without it. */
  readonly schema?: SchemaNode | undefined;
  /** Kind named in refusals; defaults to the document's `kind`. */
  readonly kind?: string;
  readonly maxOperations?: number;
  /**
   * The JSON text an already decoded `patchBody` came from, for the checks only the text can show (a JSON patch
   * operation that repeats a member).
   */
  readonly source?: string;
}

const PATCH_NAMES: Readonly<Record<PatchType, string>> = { json: "a JSON patch", merge: "a JSON merge patch", strategic: "a strategic merge patch" };

function describeJson(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * Refuses a decoded patch of the wrong shape (PATCH_INVALID, 422): a JSON patch is an array of operations, a
 * merge or strategic merge patch an object. A JSON string is a wrong shape like any other, never text to decode.
 */
export function checkPatchShape(type: PatchType, patch: unknown): void {
  if (type === "json" ? Array.isArray(patch) : isJsonObject(patch)) return;
  throw patchInvalid(`${PATCH_NAMES[type]} must be a JSON ${type === "json" ? "array of operations" : "object"}, got ${describeJson(patch)}`);
}

/**
 * Applies a PATCH body to `doc` (never modified). `patchBody` as text or bytes is parsed as JSON (YAML is the
 * HTTP layer's job); any other value is taken as the parsed patch. A caller that decoded the body itself passes
 * the decoded value (after `checkPatchShape`, so never a string) and its text as `source`. The result must be a
 * JSON object.
 */
export function applyPatch(contentType: string | undefined, doc: JsonObject, patchBody: unknown, options: ApplyPatchOptions = {}): JsonObject {
  const type = patchTypeOf(contentType);
  if (type === "strategic" && options.schema === undefined) {
    const kind = options.kind ?? (typeof doc.kind === "string" ? doc.kind : "this resource");
    throw new PlatformError("BAD_REQUEST", `strategic merge patch is not supported for ${kind}; use --type=merge or --type=json`);
  }
  const text = typeof patchBody === "string" || patchBody instanceof Uint8Array ? bodyText(patchBody) : options.source;
  const patch = parseBody(patchBody);
  checkPatchShape(type, patch);
  let result: unknown;
  if (type === "json") {
    // RFC 6902 §4 (Appendix A.13): an operation with a repeated member is invalid, but JSON.parse hides it.
    const repeated = text === undefined ? [] : findDuplicateKeys(text);
    if (repeated.length > 0) throw patchInvalid(`JSON patch operations must not repeat a member: ${repeated.join(", ")}`);
    result = applyJsonPatch(doc, patch, options.maxOperations === undefined ? {} : { maxOperations: options.maxOperations });
  } else {
    result = type === "merge" ? applyMergePatch(doc, patch as JsonObject) : applyStrategicMergePatch(doc, patch as JsonObject, options.schema);
  }
  if (!isJsonObject(result)) throw patchInvalid("the patched document must be a JSON object");
  return result;
}

function parseBody(body: unknown): unknown {
  if (typeof body !== "string" && !(body instanceof Uint8Array)) return body;
  const text = bodyText(body);
  if (text.trim() === "") throw new PlatformError("BAD_REQUEST", "the patch body is empty");
  try {
    return guardDepth(() => JSON.parse(text) as unknown);
  } catch (cause) {
    if (cause instanceof PlatformError) throw cause;
    throw new PlatformError("BAD_REQUEST", `the patch body is not valid JSON: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

function bodyText(body: string | Uint8Array): string {
  return typeof body === "string" ? body : new TextDecoder().decode(body);
}

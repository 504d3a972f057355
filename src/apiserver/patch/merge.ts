// RFC 7386 JSON Merge Patch: objects merge key by key, null deletes, anything else replaces.
import { cloneJson, guardDepth, isJsonObject, setOwn, type JsonObject } from "./json-value.js";

/**
 * Applies `patch` to a copy of `doc` as RFC 7386 defines it (a non-object patch replaces the document;
 * a non-object target of an object patch starts empty). Neither argument is modified.
 */
export function applyMergePatch(doc: unknown, patch: unknown): unknown {
  return guardDepth(() => mergeInto(cloneJson(doc), cloneJson(patch)));
}

/** Works in place on values the caller owns. */
function mergeInto(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return patch;
  const result: JsonObject = isJsonObject(target) ? target : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else setOwn(result, key, mergeInto(Object.hasOwn(result, key) ? result[key] : undefined, value));
  }
  return result;
}

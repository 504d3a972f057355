// Strategic merge patch as the upstream API server applies it; hand-written because no well-kept JavaScript library exists.
//
// Semantics follow apimachinery's strategicpatch on the server side (deletion lists merged, unmatched nulls
// ignored): maps merge, `null` deletes, lists merge by their schema's merge key or as sets, other lists are
// replaced; directives `$patch: replace|delete`, `$retainKeys`, `$setElementOrder/<list>` and
// `$deleteFromPrimitiveList/<list>`. One deliberate difference: a field the schema does not know is patched
// as if it had no patch metadata (maps merge, lists are replaced) instead of failing; unknown fields are the
// job of fieldValidation.
import { childNode, listPatchMeta, type SchemaNode } from "../../api/schema.js";
import { cloneJson, guardDepth, isJsonObject, patchInvalid, setOwn, type JsonObject } from "./json-value.js";
import { DIRECTIVE, elementKind, mergeListField, normalizeElementOrder, noMergeKey, partition, smpError } from "./strategic-list.js";

const RETAIN_KEYS = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER = "$setElementOrder";

/**
 * Applies a strategic merge patch to a copy of `doc` (neither argument is modified). `schema` describes `doc`
 * (a kind's root node); without it every list is atomic and the patch behaves like a JSON merge patch plus
 * directives. Malformed patches and directives get PATCH_INVALID naming the field path.
 */
export function applyStrategicMergePatch(doc: unknown, patch: unknown, schema?: SchemaNode): JsonObject {
  if (!isJsonObject(doc)) throw patchInvalid("the document to patch must be a JSON object");
  if (!isJsonObject(patch)) throw patchInvalid("a strategic merge patch must be a JSON object");
  return guardDepth(() => mergeMap(cloneJson(doc), cloneJson(patch), schema, ""));
}

/** Merges `patch` into `original` in place (both owned by the caller) and returns the result. */
function mergeMap(original: JsonObject, patch: JsonObject, node: SchemaNode | undefined, path: string): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) return mapDirective(patch, path);
  applyRetainKeys(original, patch, path);
  applySetElementOrder(original, patch, node, path);
  for (const [rawKey, value] of Object.entries(patch)) {
    const isDeleteList = rawKey.startsWith(DELETE_FROM_PRIMITIVE_LIST);
    const key = isDeleteList ? listKeyOf(rawKey, DELETE_FROM_PRIMITIVE_LIST, path) : rawKey;
    const at = join(path, key);
    if (value === null) {
      delete original[key];
      continue;
    }
    const current = original[key];
    if (!Object.hasOwn(original, key) || jsonKind(current) !== jsonKind(value)) {
      if (!isDeleteList) replaceWith(original, key, value);
      continue;
    }
    const child = childNode(node, key);
    if (isJsonObject(current)) setOwn(original, key, mergeMap(current, value as JsonObject, child, at));
    else if (Array.isArray(current)) setOwn(original, key, mergeListField(current, value as unknown[], listPatchMeta(child), isDeleteList, at, mergeMap));
    else setOwn(original, key, value);
  }
  return original;
}

function mapDirective(patch: JsonObject, path: string): JsonObject {
  const directive = patch[DIRECTIVE];
  if (directive === "replace") {
    delete patch[DIRECTIVE];
    return patch;
  }
  if (directive === "delete") return {};
  throw smpError(path, `unknown patch type ${JSON.stringify(directive)} in map`);
}

/** `$retainKeys`: clears fields of `original` not listed; every field the patch sets must be listed. */
function applyRetainKeys(original: JsonObject, patch: JsonObject, path: string): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const list = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(list)) throw smpError(path, `${RETAIN_KEYS} must be a list of field names`);
  const keep = new Set(list);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || key.startsWith(DELETE_FROM_PRIMITIVE_LIST) || key.startsWith(SET_ELEMENT_ORDER)) continue;
    if (!keep.has(key)) throw smpError(path, `field ${JSON.stringify(key)} is patched but missing from ${RETAIN_KEYS}`);
  }
  for (const key of Object.keys(original)) if (!keep.has(key)) delete original[key];
}

/** `$setElementOrder/<list>`: merges the list's patch (if any) and orders the result by the given element order. */
function applySetElementOrder(original: JsonObject, patch: JsonObject, node: SchemaNode | undefined, path: string): void {
  for (const directiveKey of Object.keys(patch)) {
    if (!directiveKey.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = patch[directiveKey];
    delete patch[directiveKey];
    if (!Array.isArray(order)) throw smpError(join(path, directiveKey), `expected a list, got ${jsonKind(order)}`);
    const key = listKeyOf(directiveKey, SET_ELEMENT_ORDER, path);
    const at = join(path, key);
    const inOriginal = Object.hasOwn(original, key);
    const inPatch = Object.hasOwn(patch, key);
    const originalList = inOriginal ? asList(original[key], at) : [];
    const patchList = inPatch ? asList(patch[key], at) : [];
    const meta = listPatchMeta(childNode(node, key));
    checkOrderCoversPatch(patchList, order, meta.mergeKey, at);
    let merged: unknown[];
    if (inOriginal && inPatch) merged = mergeListField(originalList, patchList, meta, false, at, mergeMap);
    else if (inOriginal) merged = originalList;
    else if (inPatch) merged = removeDirectives(patchList)[0] as unknown[];
    else continue;
    const kind = elementKind(at, originalList, patchList);
    if (kind === "object" && meta.mergeKey === "") throw smpError(at, `${SET_ELEMENT_ORDER} needs a list with a merge key`);
    const [named, serverOnly] = partition(merged, order, meta.mergeKey, at);
    setOwn(original, key, normalizeElementOrder(named, serverOnly, order, originalList, meta.mergeKey, kind, at));
    delete patch[key];
  }
}

/** The non-deleting patch elements must appear in the `$setElementOrder` list, in the same relative order. */
function checkOrderCoversPatch(patchList: unknown[], order: unknown[], mergeKey: string, path: string): void {
  if (order.length === 0 || patchList.length === 0) return;
  const kept = mergeKey === "" ? patchList : patchList.filter((v) => asObject(v, path)[DIRECTIVE] !== "delete");
  let p = 0;
  let o = 0;
  while (p < kept.length && o < order.length) {
    if (isJsonObject(kept[p]) && Object.hasOwn(kept[p] as JsonObject, DIRECTIVE)) {
      p++;
      continue;
    }
    if (sameKey(kept[p], order[o], mergeKey, path)) p++;
    o++;
  }
  if (p < kept.length) throw smpError(path, `the order of the patch list does not match the ${SET_ELEMENT_ORDER} list`);
}

function sameKey(left: unknown, right: unknown, mergeKey: string, path: string): boolean {
  if (mergeKey === "") return left === right;
  const l = asObject(left, path);
  const r = asObject(right, path);
  if (!Object.hasOwn(l, mergeKey) || !Object.hasOwn(r, mergeKey)) throw noMergeKey(path, mergeKey);
  return l[mergeKey] === r[mergeKey];
}

/** A value the original lacks (or holds with another JSON type) is taken from the patch, minus nulls and `$patch` maps. */
function replaceWith(original: JsonObject, key: string, value: unknown): void {
  discardNulls(value);
  const [cleaned, keep] = removeDirectives(value);
  if (keep) setOwn(original, key, cleaned);
  else delete original[key];
}

function discardNulls(value: unknown): void {
  if (Array.isArray(value)) {
    value.forEach(discardNulls);
  } else if (isJsonObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (v === null) delete value[k];
      else discardNulls(v);
    }
  }
}

/** Drops maps that carry `$patch` (and list elements that are such maps); other directive keys stay as upstream leaves them. */
function removeDirectives(value: unknown): [unknown, boolean] {
  if (Array.isArray(value)) {
    return [value.flatMap((item) => {
      const [cleaned, keep] = removeDirectives(item);
      return keep ? [cleaned] : [];
    }), true];
  }
  if (!isJsonObject(value)) return [value, true];
  if (Object.hasOwn(value, DIRECTIVE)) return [undefined, false];
  for (const [k, v] of Object.entries(value)) {
    const [cleaned, keep] = removeDirectives(v);
    if (keep) setOwn(value, k, cleaned);
    else delete value[k];
  }
  return [value, true];
}

function listKeyOf(directiveKey: string, prefix: string, path: string): string {
  const slash = directiveKey.indexOf("/");
  if (slash < 0 || directiveKey.slice(0, slash) !== prefix) {
    throw smpError(path, `invalid directive ${JSON.stringify(directiveKey)}: expected ${prefix}/<list field>`);
  }
  return directiveKey.slice(slash + 1);
}

function asList(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw smpError(path, `expected a list, got ${jsonKind(value)}`);
  return value;
}

function asObject(value: unknown, path: string): JsonObject {
  if (!isJsonObject(value)) throw smpError(path, `expected an object, got ${jsonKind(value)}`);
  return value;
}

function jsonKind(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "list" : typeof value;
}

function join(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

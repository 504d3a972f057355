// Strategic merge patch for lists: merge by key or as a set, `$patch` list elements, and the upstream ordering rules.
import type { ListPatchMeta, SchemaNode } from "../../api/schema.js";
import type { PlatformError } from "../../errors.js";
import { isJsonObject, patchInvalid, type JsonObject } from "./json-value.js";

export const DIRECTIVE = "$patch";

export type ElementKind = "object" | "string" | "number" | "boolean" | "null";

export type MergeMap = (original: JsonObject, patch: JsonObject, node: SchemaNode | undefined, path: string) => JsonObject;

export function smpError(path: string, message: string): PlatformError {
  return patchInvalid(`strategic merge patch${path ? ` at ${path}` : ""}: ${message}`, path || undefined);
}

/** The one kind of element the lists hold; lists of lists and mixed lists are refused as upstream does. */
export function elementKind(path: string, ...lists: unknown[][]): ElementKind {
  let kind: ElementKind | undefined;
  for (const list of lists) {
    for (const value of list) {
      if (Array.isArray(value)) throw smpError(path, "lists of lists are not supported");
      const k: ElementKind = value === null ? "null" : isJsonObject(value) ? "object" : (typeof value as ElementKind);
      if (kind !== undefined && k !== kind) throw smpError(path, "list element types are not identical");
      kind = k;
    }
  }
  if (kind === undefined) throw smpError(path, "no elements in any of the given lists");
  return kind;
}

/** Atomic lists are replaced by the patch list; merge lists (and deletion lists, whatever the field) are merged. */
export function mergeListField(original: unknown[], patch: unknown[], meta: ListPatchMeta, isDeleteList: boolean, path: string, mergeMap: MergeMap): unknown[] {
  if (meta.strategy !== "merge" && !isDeleteList) return patch;
  if (original.length === 0 && patch.length === 0) return original;
  const kind = elementKind(path, original, patch);
  const { mergeKey } = meta;
  let merged: unknown[];
  if (kind !== "object") {
    if (isDeleteList) {
      const drop = new Set(patch);
      return original.filter((v) => !drop.has(v));
    }
    merged = [...new Set([...original, ...patch])];
  } else {
    if (mergeKey === "") throw smpError(path, "cannot merge a list of objects without a merge key");
    [original, patch] = applyListDirectives(original as JsonObject[], patch as JsonObject[], mergeKey, path);
    merged = mergeByKey(original as JsonObject[], patch as JsonObject[], mergeKey, meta.items, path, mergeMap);
  }
  const [patchItems, serverOnly] = partition(merged, patch, mergeKey, path);
  return normalizeElementOrder(patchItems, serverOnly, patch, original, mergeKey, kind, path);
}

/** Removes `$patch: delete` elements' targets; `$patch: replace` makes the remaining patch elements the list. */
function applyListDirectives(original: JsonObject[], patch: JsonObject[], mergeKey: string, path: string): [JsonObject[], JsonObject[]] {
  const plain: JsonObject[] = [];
  let replace = false;
  for (const element of patch) {
    if (!Object.hasOwn(element, DIRECTIVE)) {
      plain.push(element);
      continue;
    }
    const directive = element[DIRECTIVE];
    if (directive === "delete") {
      if (!Object.hasOwn(element, mergeKey)) throw noMergeKey(path, mergeKey);
      original = original.filter((o) => !(Object.hasOwn(o, mergeKey) && o[mergeKey] === element[mergeKey]));
    } else if (directive === "replace") {
      replace = true;
    } else if (directive === "merge") {
      throw smpError(path, "merging lists cannot yet be specified in the patch");
    } else {
      throw smpError(path, `unknown patch type ${JSON.stringify(directive)} in list element`);
    }
  }
  return replace ? [plain, []] : [original, plain];
}

/** Merges each patch element into the element with the same key, or appends it (later duplicates merge into it). */
function mergeByKey(original: JsonObject[], patch: JsonObject[], mergeKey: string, items: SchemaNode | undefined, path: string, mergeMap: MergeMap): JsonObject[] {
  const result = original.slice();
  for (const element of patch) {
    if (!Object.hasOwn(element, mergeKey)) throw noMergeKey(path, mergeKey);
    const at = result.findIndex((o) => Object.hasOwn(o, mergeKey) && o[mergeKey] === element[mergeKey]);
    if (at < 0) result.push(element);
    else result[at] = mergeMap(result[at]!, element, items, `${path}[${at}]`);
  }
  return result;
}

/** Splits `merged` into the elements named in `by` and the rest (server-only elements). */
export function partition(merged: unknown[], by: unknown[], mergeKey: string, path: string): [unknown[], unknown[]] {
  const named: unknown[] = [];
  const rest: unknown[] = [];
  if (mergeKey === "") {
    const set = new Set(by);
    for (const v of merged) (set.has(v) ? named : rest).push(v);
    return [named, rest];
  }
  for (const v of merged) {
    if (!isJsonObject(v)) throw smpError(path, "expected a list of objects");
    if (!Object.hasOwn(v, mergeKey)) throw noMergeKey(path, mergeKey);
    const found = by.some((b) => {
      if (!isJsonObject(b)) throw smpError(path, "expected a list of objects");
      return Object.hasOwn(b, mergeKey) && b[mergeKey] === v[mergeKey];
    });
    (found ? named : rest).push(v);
  }
  return [named, rest];
}

/**
 * Orders patch elements as `patchOrder` lists them and server-only elements as the live list does, then
 * interleaves the two by live order. Precedence: `$setElementOrder` > order in the patch > live order.
 */
export function normalizeElementOrder(
  patchItems: unknown[],
  serverOnly: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  mergeKey: string,
  kind: ElementKind,
  path: string,
): unknown[] {
  const left = sortByOrder(serverOnly, serverOrder, mergeKey, kind, path);
  const right = sortByOrder(patchItems, patchOrder, mergeKey, kind, path);
  const position = indexer(serverOrder, mergeKey, kind);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length && j < right.length) {
    const li = position(left[i]);
    const ri = position(right[j]);
    if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
    else out.push(right[j++]);
  }
  return out.concat(left.slice(i), right.slice(j));
}

function sortByOrder(list: unknown[], order: unknown[], mergeKey: string, kind: ElementKind, path: string): unknown[] {
  let toSort = list;
  let deletions: unknown[] = [];
  if (kind === "object") {
    for (const v of [...list, ...order]) {
      if (!isJsonObject(v)) throw smpError(path, "expected a list of objects");
      if (!Object.hasOwn(v, mergeKey)) throw noMergeKey(path, mergeKey);
    }
    toSort = list.filter((v) => (v as JsonObject)[DIRECTIVE] !== "delete");
    deletions = list.filter((v) => (v as JsonObject)[DIRECTIVE] === "delete");
  }
  const position = indexer(order, mergeKey, kind);
  const keyed = toSort.map((value) => ({ value, at: position(value) }));
  if (keyed.every((k) => k.at >= 0)) {
    keyed.sort((a, b) => a.at - b.at);
  } else {
    // Upstream's comparator calls every unplaced element "less"; an insertion sort reproduces its result.
    for (let i = 1; i < keyed.length; i++) {
      for (let j = i; j > 0 && less(keyed[j]!.at, keyed[j - 1]!.at); j--) [keyed[j], keyed[j - 1]] = [keyed[j - 1]!, keyed[j]!];
    }
  }
  return [...keyed.map((k) => k.value), ...deletions];
}

function less(a: number, b: number): boolean {
  return a >= 0 && b >= 0 ? a < b : true;
}

/** Position of an element in `order`, compared by merge key value (objects) or by value (scalars); -1 if absent. */
function indexer(order: unknown[], mergeKey: string, kind: ElementKind): (value: unknown) => number {
  const key = (v: unknown): unknown => (kind === "object" ? (isJsonObject(v) ? (v[mergeKey] ?? null) : null) : v);
  const first = new Map<unknown, number>();
  order.forEach((v, i) => {
    const k = key(v);
    if (!first.has(k)) first.set(k, i);
  });
  return (value) => first.get(key(value)) ?? -1;
}

export function noMergeKey(path: string, mergeKey: string): PlatformError {
  return smpError(path, `list element does not contain the declared merge key ${JSON.stringify(mergeKey)}`);
}

// The field set of an object and the comparison of two objects, walked along the kind's field schema.
import { isDeepStrictEqual } from "node:util";
import type { ListNode, MapNode, ObjectNode, SchemaNode } from "../../api/schema.js";
import { fieldElement, FieldSet, keyElement, valueElement } from "./field-set.js";

export interface Comparison {
  readonly added: FieldSet;
  readonly removed: FieldSet;
  readonly modified: FieldSet;
}

type Obj = Record<string, unknown>;

export const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * What changed from `before` to `after` (either may be undefined), as upstream's typed comparison: leaves (scalars,
 * atomic lists, free-form values) added, removed or modified; list items and map entries added or removed as
 * members. A field holding a map or a set or map list that appears or goes is a member too, unless required (upstream
 * compares Go objects, whose optional maps and slices are omitted when nil, required ones never); a struct field only
 * when it holds an empty object or null (Go objects always carry their struct fields, so upstream never sees one appear).
 */
export function compareObjects(before: unknown, after: unknown, node: SchemaNode): Comparison {
  const c: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet() };
  walk(before, after, node, [], c, true);
  return c;
}

/**
 * Every field of `obj`: upstream's ToFieldSet, where a field is a member of its own only when free-form (a map's
 * entry, an unknown field), empty or null; list items always are.
 */
export function fieldSetOf(obj: unknown, node: SchemaNode): FieldSet {
  const c: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet() };
  walk(undefined, obj, node, [], c, false);
  return c.added;
}

const isCollection = (node: SchemaNode | undefined) => node?.type === "map" || (node?.type === "list" && node.listType !== "atomic");

function walk(before: unknown, after: unknown, node: SchemaNode | undefined, path: string[], c: Comparison, comparing: boolean): void {
  if (before === undefined && after === undefined) return;
  // Equal values change nothing: a subtree a write sent back as it was (a subresource write's whole spec, an update's
  // untouched fields) is one cheap pass instead of a walk that builds its list indexes. Not at the top or at metadata,
  // whose managedFields the walk leaves out (a level below holds no skipped key).
  if (before !== undefined && after !== undefined && typeof before === "object" && path.length > 0 && !(path.length === 1 && path[0] === METADATA) && sameJson(before, after)) return;
  if (node?.type === "object" || node?.type === "map") {
    if ((before === undefined || isObject(before)) && (after === undefined || isObject(after))) {
      const b = before as Obj | undefined;
      const a = after as Obj | undefined;
      // Every key of either side once: the earlier side's, then the later side's new ones. metadata.managedFields is
      // no one's to own (managers.ts strips it), so it is not compared: writes carry it whole, often unchanged, and
      // its deep comparison was a share of every update.
      const skip = path.length === 1 && path[0] === METADATA ? "managedFields" : undefined;
      for (const k in b) if (Object.hasOwn(b, k) && k !== skip) visitKey(k, b, a, node, path, c, comparing);
      for (const k in a) if (Object.hasOwn(a, k) && k !== skip && (b === undefined || !Object.hasOwn(b, k))) visitKey(k, b, a, node, path, c, comparing);
      return;
    }
  } else if (node?.type === "list" && node.listType !== "atomic") {
    if ((before === undefined || Array.isArray(before)) && (after === undefined || Array.isArray(after))) {
      const b = indexItems(before as unknown[] | undefined, node);
      const a = indexItems(after as unknown[] | undefined, node);
      for (const [e, bv] of b) {
        path.push(e);
        if (!a.has(e)) c.removed.insert(path);
        walk(bv, a.get(e), node.items, path, c, comparing);
        path.pop();
      }
      for (const [e, av] of a) {
        if (b.has(e)) continue;
        path.push(e);
        c.added.insert(path);
        walk(undefined, av, node.items, path, c, comparing);
        path.pop();
      }
      return;
    }
  }
  // A leaf: a scalar, an atomic list, a free-form value, or a value of another shape than the schema says.
  if (path.length === 0) return;
  if (before === undefined) c.added.insert(path);
  else if (after === undefined) c.removed.insert(path);
  else if (before !== after && (typeof before !== "object" || !isDeepStrictEqual(before, after))) c.modified.insert(path);
}

/** One key of an object or map node: walked below, then the key itself counted when it is a member of its own. */
function visitKey(k: string, b: Obj | undefined, a: Obj | undefined, node: ObjectNode | MapNode, path: string[], c: Comparison, comparing: boolean): void {
  const declared = node.type === "object" ? (Object.hasOwn(node.fields, k) ? node.fields[k] : undefined) : node.values;
  const bv = b?.[k];
  const av = a?.[k];
  path.push(fieldElementOf(k));
  walk(bv, av, declared, path, c, comparing);
  if (bv === undefined) {
    if (av !== undefined && owns(av, node, declared, comparing, k)) c.added.insert(path);
  } else if (av === undefined) {
    if (owns(bv, node, declared, comparing, k)) c.removed.insert(path);
  } else {
    const ownAfter = owns(av, node, declared, comparing, k);
    if (ownAfter !== owns(bv, node, declared, comparing, k)) (ownAfter ? c.added : c.removed).insert(path);
  }
  path.pop();
}

const METADATA = fieldElement("metadata");

/** Whether field `k` of `node`, holding `v`, is a member of its own (see compareObjects). */
export function owns(v: unknown, node: ObjectNode | MapNode, declared: SchemaNode | undefined, comparing: boolean, k: string): boolean {
  if (v === null || (isObject(v) && isEmptyObject(v)) || node.type === "map" || declared === undefined) return true;
  return comparing && isCollection(declared) && !node.required.includes(k);
}

/**
 * Strict equality of two JSON values (key order aside; `undefined` members count as present, so objects differing
 * only there compare unequal and are walked, which finds nothing: the check may say "unequal" for equal, never the
 * reverse).
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  let keys = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    if (!Object.hasOwn(b, k) || !sameJson((a as Obj)[k], (b as Obj)[k])) return false;
    keys++;
  }
  for (const k in b) if (Object.hasOwn(b, k)) keys--;
  return keys === 0;
}

function isEmptyObject(v: Obj): boolean {
  for (const k in v) if (Object.hasOwn(v, k)) return false;
  return true;
}

/**
 * `f:<name>` of a field, remembered: every write compares whole objects, and their field names repeat (a bounded
 * map, emptied when full, as map keys such as label names are open-ended).
 */
const FIELD_ELEMENTS = new Map<string, string>();
const MAX_FIELD_ELEMENTS = 4096;

export function fieldElementOf(name: string): string {
  let e = FIELD_ELEMENTS.get(name);
  if (e === undefined) {
    if (FIELD_ELEMENTS.size >= MAX_FIELD_ELEMENTS) FIELD_ELEMENTS.clear();
    FIELD_ELEMENTS.set(name, (e = fieldElement(name)));
  }
  return e;
}

/** The items of a set or map list by their path element (`v:` or `k:`); a repeated element keeps its first item. */
export function indexItems(list: readonly unknown[] | undefined, node: ListNode): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const item of list ?? []) {
    const e = itemElement(item, node);
    if (!out.has(e)) out.set(e, item);
  }
  return out;
}

/** The path element of one item of a set or map list. */
export function itemElement(item: unknown, node: ListNode): string {
  if (node.listType === "map" && isObject(item)) return keyElement(item, node.mapKeys ?? []);
  return valueElement(item);
}

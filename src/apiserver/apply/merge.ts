// Apply's merge of a configuration into the live object, and the pruning of fields an applier stopped applying.
import type { ListNode, SchemaNode } from "../../api/schema.js";
import { indexItems, itemElement } from "./compare.js";
import { fieldElement, FieldSet } from "./field-set.js";
import { copyPlain } from "../../plain-data.js";

type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * `config` merged into `live` (neither modified): structs and maps field by field, set and map lists item by item
 * in upstream's order (configuration order, live items kept where they were), atomic lists and scalars replaced.
 * A null in the configuration removes the field, as the stored form holds no nulls.
 */
export function mergeConfig(live: unknown, config: unknown, node: SchemaNode | undefined): unknown {
  if (config === undefined) return live;
  if (isObject(live) && isObject(config) && (node?.type === "object" || node?.type === "map")) {
    const out: Obj = { ...live };
    for (const [k, v] of Object.entries(config)) {
      if (v === null) delete out[k];
      else out[k] = mergeConfig(live[k], v, node.type === "object" ? node.fields[k] : node.values);
    }
    return out;
  }
  if (Array.isArray(live) && Array.isArray(config) && node?.type === "list" && node.listType !== "atomic") return mergeLists(live, config, node);
  return copyPlain(config);
}

/** Upstream's list merge: shared items in the configuration's order, live-only items where they stood. */
function mergeLists(lhs: readonly unknown[], rhs: readonly unknown[], node: ListNode): unknown[] {
  const lPE = lhs.map((i) => itemElement(i, node));
  const rPE = rhs.map((i) => itemElement(i, node));
  const observedL = indexItems(lhs, node);
  const observedR = indexItems(rhs, node);
  const shared = rPE.filter((e) => observedL.has(e));
  let nextShared = shared.shift();
  const merged = new Set<string>();
  const out: unknown[] = [];
  const take = (e: string) => {
    merged.add(e);
    out.push(mergeConfig(observedL.get(e), observedR.get(e), node.items));
  };
  for (let l = 0, r = 0; l < lPE.length || r < rPE.length; ) {
    if (l < lPE.length && r < rPE.length) {
      if (lPE[l] === rPE[r]) {
        if (!merged.has(lPE[l]!)) take(lPE[l]!);
        l++;
        r++;
        nextShared = shared.shift();
        continue;
      }
      if (observedR.has(lPE[l]!) && nextShared !== undefined && nextShared !== lPE[l]) {
        l++;
        continue;
      }
    }
    if (l < lPE.length) {
      if (!observedR.has(lPE[l]!)) {
        out.push(copyPlain(lhs[l]));
        l++;
        continue;
      }
      if (merged.has(lPE[l]!)) {
        l++;
        continue;
      }
    }
    if (r < rPE.length) {
      const e = rPE[r]!;
      if (!merged.has(e)) take(e);
      r++;
      if (nextShared === e) nextShared = shared.shift();
    }
  }
  return out;
}

/**
 * Removes from `merged` (in place) what the applier owned in its previous configuration (`last`) and no manager
 * owns now (`owned`, the applier's new set included). As upstream, a struct field counts as owned when anything
 * below it is; list items and map entries only when they are members themselves.
 */
export function pruneUnowned(merged: unknown, last: FieldSet, owned: FieldSet, node: SchemaNode | undefined): void {
  if (isObject(merged) && (node?.type === "object" || node?.type === "map")) {
    for (const k of Object.keys(merged)) {
      const e = fieldElement(k);
      const declared = node.type === "object" && Object.hasOwn(node.fields, k);
      const child = node.type === "object" ? node.fields[k] : node.values;
      visit(last.child(e), owned.child(e), declared, () => delete merged[k], (l, o) => pruneUnowned(merged[k], l, o, child));
    }
    return;
  }
  if (Array.isArray(merged) && node?.type === "list" && node.listType !== "atomic") {
    for (let i = merged.length - 1; i >= 0; i--) {
      const e = itemElement(merged[i], node);
      visit(last.child(e), owned.child(e), false, () => merged.splice(i, 1), (l, o) => pruneUnowned(merged[i], l, o, node.items));
    }
  }
}

/** One entry of `merged`: kept when the applier never owned it, removed when no one owns it now, else walked into. */
function visit(last: FieldSet | undefined, owned: FieldSet | undefined, namedField: boolean, remove: () => void, descend: (l: FieldSet, o: FieldSet) => void): void {
  if (last === undefined) return;
  const counts = (s: FieldSet | undefined) => s !== undefined && (s.member || (namedField && s.children.size > 0));
  if (counts(last) && !counts(owned)) remove();
  else descend(last, owned ?? new FieldSet());
}

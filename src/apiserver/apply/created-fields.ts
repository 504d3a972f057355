// A create's managedFields in one walk: the FieldsV1 value of what a first writer owns, without building field sets.
//
// Every create (a node's CSR, each Event) records its writer as the owner of all it sent. The general path
// (field-manager.ts) compares the object with nothing into a trie, strips what no one owns, then encodes the trie;
// for a create that is three passes and a map per field for a result that is the object's own shape. This walk gives
// the same value — the same members, `.` and element order — straight from the object (created-fields.test.ts holds
// the two equal on random objects of every served kind's schema).
import type { ListNode, MapNode, ObjectNode, SchemaNode } from "../../api/schema.js";
import { fieldElementOf, indexItems, isObject, owns } from "./compare.js";
import { sortedElements } from "./field-set.js";

type Obj = Record<string, unknown>;
type FieldsV1 = Record<string, unknown>;

/** Top-level fields no manager owns (managers.ts STRIPPED): type meta; `metadata` itself is not a member either. */
const STRIPPED_TOP = new Set(["apiVersion", "kind"]);
/** The server's own metadata, owned by no one (managers.ts STRIPPED). */
const STRIPPED_METADATA = new Set(["name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields", "resourceVersion"]);

/**
 * The FieldsV1 value a create through the main resource records for its writer, or undefined when the writer owns
 * nothing. `hasStatus`: the kind's status is written through its subresource, so a create owns none of it.
 */
export function createdFieldsV1(obj: Obj, schema: ObjectNode, hasStatus: boolean): FieldsV1 | undefined {
  const out: FieldsV1 = {};
  let any = false;
  for (const k of sortedElements(ownKeys(obj))) {
    const name = k.slice(2);
    if (hasStatus && name === "status") continue;
    const v = obj[name];
    const declared = Object.hasOwn(schema.fields, name) ? schema.fields[name] : undefined;
    // Stripped fields lose their membership, not what lies below them (a difference by path, as ownable's).
    const value = name === "metadata" ? metadataFields(v, declared) : element(children(v, declared), !STRIPPED_TOP.has(name) && (isLeaf(v, declared) || owns(v, schema, declared, true, name)));
    if (value !== undefined) {
      out[k] = value;
      any = true;
    }
  }
  return any ? out : undefined;
}

/** `metadata`: its fields but the server's, with `managedFields` not walked (compare.ts skips it too). */
function metadataFields(v: unknown, declared: SchemaNode | undefined): FieldsV1 | undefined {
  if (!(declared?.type === "object" || declared?.type === "map") || !isObject(v)) return undefined;
  return element(children(v, declared, "managedFields", STRIPPED_METADATA), false);
}

/** The JSON value of one element: its children, then `.` when it is a member too; undefined when it is neither. */
function element(kids: FieldsV1 | undefined, member: boolean): FieldsV1 | undefined {
  if (kids === undefined) return member ? {} : undefined;
  if (member) kids["."] = {};
  return kids;
}

/** Whether `v` is a leaf under `node`: a value the walk does not descend into (compare.ts, the leaf case). */
function isLeaf(v: unknown, node: SchemaNode | undefined): boolean {
  if (v === undefined) return false;
  if (node?.type === "object" || node?.type === "map") return !isObject(v);
  if (node?.type === "list" && node.listType !== "atomic") return !Array.isArray(v);
  return true;
}

/**
 * The elements below `v` under `node`, sorted, or undefined when none. `skip`: a key not walked; `unowned`: keys whose
 * own membership is dropped (what lies below them stays).
 */
function children(v: unknown, node: SchemaNode | undefined, skip?: string, unowned?: ReadonlySet<string>): FieldsV1 | undefined {
  if (node?.type === "object" || node?.type === "map") return isObject(v) ? objectChildren(v, node, skip, unowned) : undefined;
  if (node?.type === "list" && node.listType !== "atomic" && Array.isArray(v)) return listChildren(v, node);
  return undefined;
}

function objectChildren(v: Obj, node: ObjectNode | MapNode, skip: string | undefined, unowned: ReadonlySet<string> | undefined): FieldsV1 | undefined {
  let out: FieldsV1 | undefined;
  for (const k of sortedElements(ownKeys(v, skip))) {
    const name = k.slice(2);
    const av = v[name];
    const declared = node.type === "object" ? (Object.hasOwn(node.fields, name) ? node.fields[name] : undefined) : node.values;
    const member = !unowned?.has(name) && (isLeaf(av, declared) || owns(av, node, declared, true, name));
    const value = element(children(av, declared), member);
    if (value !== undefined) (out ??= {})[k] = value;
  }
  return out;
}

function listChildren(v: readonly unknown[], node: ListNode): FieldsV1 | undefined {
  const items = indexItems(v, node);
  if (items.size === 0) return undefined;
  const out: FieldsV1 = {};
  // Every item of a set or map list is a member of its own.
  for (const e of sortedElements(items.keys())) out[e] = element(children(items.get(e), node.items), true);
  return out;
}

/** The `f:` elements of an object's own keys holding a value (`skip` left out). */
function ownKeys(v: Obj, skip?: string): string[] {
  const out: string[] = [];
  for (const k in v) if (Object.hasOwn(v, k) && k !== skip && v[k] !== undefined) out.push(fieldElementOf(k));
  return out;
}

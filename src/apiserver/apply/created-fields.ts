// A create's managedFields in one walk: the FieldsV1 value of what a first writer owns, without building field sets.
//
// Every create (a node's CSR, each Event) records its writer as the owner of all it sent. The general path
// (field-manager.ts) compares the object with nothing into a trie, strips what no one owns, then encodes the trie;
// for a create that is three passes and a map per field for a result that is the object's own shape. This walk gives
// the same value — the same members, `.` and element order — straight from the object (created-fields.test.ts holds
// the two equal on random objects of every served kind's schema).
import type { ListNode, MapNode, ObjectNode, SchemaNode } from "../../api/schema.js";
import { fieldElementOf, indexItems, isObject, owns } from "./compare.js";
import { sortedElements, sortInPlace } from "./field-set.js";
import { UNOWNED_METADATA_FIELDS, UNOWNED_TOP_FIELDS } from "./managers.js";

type Obj = Record<string, unknown>;
type FieldsV1 = Record<string, unknown>;

/** What one object level leaves out: a key not walked, keys that are not members themselves, rules for the levels below. */
interface Level {
  readonly skip?: string;
  readonly unowned?: ReadonlySet<string>;
  readonly below?: Readonly<Record<string, Level>>;
}

/**
 * The top level: type meta and `metadata` are no one's, nor the server's own metadata below it (managers.ts), and
 * `metadata.managedFields` is not walked (compare.ts skips it too).
 */
const TOP: Level = {
  unowned: new Set(UNOWNED_TOP_FIELDS),
  below: { metadata: { skip: "managedFields", unowned: new Set(UNOWNED_METADATA_FIELDS) } },
};
/** The same for a kind whose status is written through its subresource: a create owns none of it. */
const TOP_WITHOUT_STATUS: Level = { ...TOP, skip: "status" };

/**
 * The FieldsV1 value a create through the main resource records for its writer, or undefined when the writer owns
 * nothing. `hasStatus`: the kind's status is written through its subresource.
 */
export function createdFieldsV1(obj: Obj, schema: ObjectNode, hasStatus: boolean): FieldsV1 | undefined {
  return objectChildren(obj, schema, hasStatus ? TOP_WITHOUT_STATUS : TOP);
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

/** The elements below `v` under `node`, sorted, or undefined when none. */
function children(v: unknown, node: SchemaNode | undefined, level?: Level): FieldsV1 | undefined {
  if (node?.type === "object" || node?.type === "map") return isObject(v) ? objectChildren(v, node, level) : undefined;
  if (node?.type === "list" && node.listType !== "atomic" && Array.isArray(v)) return listChildren(v, node);
  return undefined;
}

function objectChildren(v: Obj, node: ObjectNode | MapNode, level: Level | undefined): FieldsV1 | undefined {
  let out: FieldsV1 | undefined;
  // Field elements sort as their names do (`f:` before each): the names are sorted, not the elements.
  for (const name of sortInPlace(ownKeys(v, level?.skip))) {
    const av = v[name];
    const declared = node.type === "object" ? (Object.hasOwn(node.fields, name) ? node.fields[name] : undefined) : node.values;
    const member = !level?.unowned?.has(name) && (isLeaf(av, declared) || owns(av, node, declared, true, name));
    const value = element(children(av, declared, level?.below?.[name]), member);
    if (value !== undefined) (out ??= {})[fieldElementOf(name)] = value;
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

/** An object's own keys holding a value (`skip` left out). */
function ownKeys(v: Obj, skip?: string): string[] {
  const out: string[] = [];
  for (const k in v) if (Object.hasOwn(v, k) && k !== skip && v[k] !== undefined) out.push(k);
  return out;
}

// managedFields: decoding and encoding entries, and upstream's ownership rules for updates and applies.
import type { ManagedFieldsEntry } from "../../api/meta.js";
import { FieldSet, fieldElement, pathString, sortInPlace } from "./field-set.js";

export type Operation = "Apply" | "Update";

export interface ManagerIdentity {
  readonly manager: string;
  readonly operation: Operation;
  readonly apiVersion: string;
  readonly subresource?: string | undefined;
}

export interface Managed extends ManagerIdentity {
  time?: string | undefined;
  set: FieldSet;
}

/** Upstream's manager identifier, compared: an applier is the same manager whatever the apiVersion it applied. */
export function sameManager(a: ManagerIdentity, b: ManagerIdentity): boolean {
  return (
    a.manager === b.manager &&
    a.operation === b.operation &&
    (a.operation === "Apply" || a.apiVersion === b.apiVersion) &&
    (a.subresource ?? "") === (b.subresource ?? "")
  );
}

/**
 * An entry of the stored object, written by this server: its FieldsV1 value is decoded only when something reads its
 * set (a subresource write — an approval, a certificate — touches none of the entries already there), and written
 * back as it was while the set stays the one read.
 */
class StoredEntry implements Managed {
  time: string | undefined;
  #decoded: FieldSet | undefined;
  #set: FieldSet | undefined;

  constructor(
    readonly manager: string,
    readonly operation: Operation,
    readonly apiVersion: string,
    readonly subresource: string | undefined,
    time: string | undefined,
    readonly fieldsV1: object,
  ) {
    this.time = time;
  }

  get set(): FieldSet {
    return (this.#set ??= this.#decoded ??= FieldSet.fromJSON(this.fieldsV1));
  }

  set set(s: FieldSet) {
    this.#set = s;
  }

  /** The stored value while the set is the one it encodes (set operations return their input when they change nothing). */
  get unchangedValue(): object | undefined {
    return this.#set === undefined || this.#set === this.#decoded ? this.fieldsV1 : undefined;
  }
}

/**
 * The entries of `list`, or undefined when it is absent, empty or not a list of readable entries. `stored`: the list
 * is the stored object's, written by this server, so its FieldsV1 values are decoded when read (StoredEntry).
 */
export function decodeManaged(list: unknown, stored = false): Managed[] | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const out: Managed[] = [];
  for (const e of list as ManagedFieldsEntry[]) {
    if (typeof e !== "object" || e === null || typeof e.manager !== "string") return undefined;
    if (e.operation !== "Apply" && e.operation !== "Update") return undefined;
    const apiVersion = String(e.apiVersion ?? "");
    const subresource = e.subresource || undefined;
    if (stored && typeof e.fieldsV1 === "object" && e.fieldsV1 !== null) {
      out.push(new StoredEntry(e.manager, e.operation, apiVersion, subresource, e.time, e.fieldsV1));
      continue;
    }
    let set: FieldSet;
    try {
      set = e.fieldsV1 === undefined ? new FieldSet() : FieldSet.fromJSON(e.fieldsV1);
    } catch {
      return undefined;
    }
    out.push({ manager: e.manager, operation: e.operation, apiVersion, subresource, time: e.time, set });
  }
  return out;
}

/**
 * Takes `paths` (member paths) from an entry's set. A stored entry that holds none of them keeps its value
 * undecoded: `FieldSet.difference` changes a set only where both hold a member.
 */
export function release(m: Managed, paths: FieldSet): void {
  if (paths.empty) return;
  const value = storedValue(m);
  if (value !== undefined && !holdsAny(value, paths, true)) return;
  m.set = m.set.difference(paths);
}

/** Whether an entry owns nothing (a stored one read from its value: an empty FieldsV1 object is an empty set). */
export function ownsNothing(m: Managed): boolean {
  const value = storedValue(m);
  return value !== undefined ? Object.keys(value).length === 0 : m.set.empty;
}

/** The FieldsV1 value of a stored entry whose set no write has changed; undefined for any other entry. */
function storedValue(m: Managed): object | undefined {
  return m instanceof StoredEntry ? m.unchangedValue : undefined;
}

/**
 * Whether the FieldsV1 value holds a member path of `paths`. A node of the value is a member when it writes `.`, or
 * below the top when it has no children (FieldSet.fromJSON's rules); a value that is no object answers yes, so that
 * decoding it decides (and refuses it).
 */
function holdsAny(value: unknown, paths: FieldSet, top: boolean): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return true;
  const v = value as Record<string, unknown>;
  if (paths.member && (Object.hasOwn(v, ".") || (!top && !hasChildren(v)))) return true;
  for (const [e, below] of paths.children) if (Object.hasOwn(v, e) && holdsAny(v[e], below, false)) return true;
  return false;
}

function hasChildren(v: Record<string, unknown>): boolean {
  for (const k in v) if (Object.hasOwn(v, k) && k !== ".") return true;
  return false;
}

/** Entries as upstream orders them: appliers first, then by time, manager, apiVersion and subresource. */
export function encodeManaged(managed: readonly Managed[]): ManagedFieldsEntry[] {
  const sorted = sortInPlace(
    [...managed],
    (p, q) =>
      cmp(p.operation, q.operation) ||
      cmp(p.time ?? "", q.time ?? "") ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource ?? "", q.subresource ?? ""),
  );
  return sorted.map((m) => ({
    manager: m.manager,
    operation: m.operation,
    apiVersion: m.apiVersion,
    ...(m.time !== undefined ? { time: m.time } : {}),
    fieldsType: "FieldsV1",
    // An untouched stored entry is written back as it was: encoded once, at the write that set it.
    fieldsV1: storedValue(m) ?? m.set.toJSON(),
    ...(m.subresource ? { subresource: m.subresource } : {}),
  }));
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Top-level fields no manager owns, as upstream strips them: type meta, and `metadata` as a member of its own. */
export const UNOWNED_TOP_FIELDS: readonly string[] = ["apiVersion", "kind", "metadata"];
/** The server's own metadata, owned by no manager. */
export const UNOWNED_METADATA_FIELDS: readonly string[] = ["name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields", "resourceVersion"];

/** Fields no manager owns (their paths: what lies below them stays ownable). */
const STRIPPED: readonly (readonly string[])[] = [...UNOWNED_TOP_FIELDS.map((f) => [f]), ...UNOWNED_METADATA_FIELDS.map((f) => ["metadata", f])].map((p) => p.map(fieldElement));

const STRIP_SET = (() => {
  const s = new FieldSet();
  for (const p of STRIPPED) s.insert(p);
  return s;
})();

/**
 * The paths of `set` a write may own: without the stripped metadata, and without the fields its endpoint resets
 * (`status` through the main resource; everything but `metadata` and `status` through a subresource).
 */
export function ownable(set: FieldSet, subresource: string | undefined, hasStatus: boolean): FieldSet {
  const stripped = set.difference(STRIP_SET);
  const reset = (e: string) => {
    const top = e.slice(2);
    return subresource !== undefined ? top !== "metadata" && top !== "status" : hasStatus && top === "status";
  };
  let any = false;
  for (const e of stripped.children.keys()) any ||= reset(e);
  if (!any) return stripped;
  // A new top level: `difference` returns its input when it strips nothing, and sets are shared, never changed.
  const out = new FieldSet();
  out.member = stripped.member;
  for (const [e, c] of stripped.children) if (!reset(e)) out.children.set(e, c);
  return out;
}

export interface Conflict {
  readonly manager: Managed;
  readonly path: readonly string[];
}

/** How a manager is named in conflicts, as upstream prints its identifier. */
export function describeManager(m: ManagerIdentity): string {
  let s = JSON.stringify(m.manager);
  if (m.subresource) s += ` with subresource ${JSON.stringify(m.subresource)}`;
  if (m.operation === "Update") s += ` using ${m.apiVersion}`;
  return s;
}

/** Upstream's conflict message: one line for one conflict, else grouped by manager. */
export function conflictMessage(conflicts: readonly Conflict[]): string {
  if (conflicts.length === 1) {
    const c = conflicts[0]!;
    return `Apply failed with 1 conflict: conflict with ${describeManager(c.manager)}: ${pathString(c.path)}`;
  }
  const byManager = new Map<string, string[]>();
  for (const c of conflicts) {
    const name = describeManager(c.manager);
    byManager.set(name, [...(byManager.get(name) ?? []), pathString(c.path)]);
  }
  const lines: string[] = [];
  for (const name of [...byManager.keys()].sort()) lines.push(`conflicts with ${name}:`, ...byManager.get(name)!.map((p) => `- ${p}`));
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join("\n")}`;
}

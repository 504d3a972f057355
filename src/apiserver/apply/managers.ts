// managedFields: decoding and encoding entries, and upstream's ownership rules for updates and applies.
import type { ManagedFieldsEntry } from "../../api/meta.js";
import { FieldSet, fieldElement, pathString } from "./field-set.js";

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
  /** The stored FieldsV1 value `set` was read from: written back as it is while the entry's set stays that set. */
  stored?: { readonly set: FieldSet; readonly fieldsV1: unknown };
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
 * The entries of `list`, or undefined when it is absent, empty or not a list of readable entries. `stored`: the list
 * is the stored object's, written by this server, so an entry no write changes keeps its FieldsV1 value as it is.
 */
export function decodeManaged(list: unknown, stored = false): Managed[] | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const out: Managed[] = [];
  for (const e of list as ManagedFieldsEntry[]) {
    if (typeof e !== "object" || e === null || typeof e.manager !== "string") return undefined;
    if (e.operation !== "Apply" && e.operation !== "Update") return undefined;
    let set: FieldSet;
    try {
      set = e.fieldsV1 === undefined ? new FieldSet() : FieldSet.fromJSON(e.fieldsV1);
    } catch {
      return undefined;
    }
    const entry: Managed = { manager: e.manager, operation: e.operation, apiVersion: String(e.apiVersion ?? ""), subresource: e.subresource || undefined, time: e.time, set };
    if (stored && e.fieldsV1 !== undefined) entry.stored = { set, fieldsV1: e.fieldsV1 };
    out.push(entry);
  }
  return out;
}

/** Entries as upstream orders them: appliers first, then by time, manager, apiVersion and subresource. */
export function encodeManaged(managed: readonly Managed[]): ManagedFieldsEntry[] {
  const sorted = [...managed].sort(
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
    // Set operations return the set itself when they change nothing, so an untouched entry is encoded once, at its write.
    fieldsV1: m.stored?.set === m.set ? m.stored.fieldsV1 : m.set.toJSON(),
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

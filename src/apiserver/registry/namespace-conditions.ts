// What a namespace being deleted still holds, and the status conditions that say so (upstream's types and texts).
import type { NamespaceCondition } from "../../api/types/core.js";

/** What one pass of a namespace's content deletion left behind. */
export class Leftovers {
  /** Objects still there, by `plural.group` (upstream's spelling: `serviceaccounts.` for the core group). */
  readonly byResource = new Map<string, number>();
  /** Objects held, by each finalizer that holds them. */
  readonly byFinalizer = new Map<string, number>();
  /** Deletes that failed, as `resource "name": message`. */
  readonly failures: string[] = [];

  get remaining(): number {
    let n = 0;
    for (const count of this.byResource.values()) n += count;
    return n;
  }

  /** An object the delete only marked (`finalizers` hold it), or could not delete (`failure`). */
  add(resource: string, finalizers: readonly string[], failure?: string): void {
    this.byResource.set(resource, (this.byResource.get(resource) ?? 0) + 1);
    for (const f of finalizers) this.byFinalizer.set(f, (this.byFinalizer.get(f) ?? 0) + 1);
    if (failure !== undefined) this.failures.push(failure);
  }

  /** The three conditions upstream's namespace controller reports while content remains. */
  conditions(): Omit<NamespaceCondition, "lastTransitionTime">[] {
    const listed = (m: Map<string, number>, form: (key: string, n: number) => string) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, n]) => form(k, n)).join(", ");
    return [
      this.failures.length > 0
        ? { type: "NamespaceDeletionContentFailure", status: "True", reason: "ContentDeletionFailed", message: `Failed to delete all resource types, ${this.failures.length} remaining: ${this.failures.join(", ")}` }
        : { type: "NamespaceDeletionContentFailure", status: "False", reason: "ContentDeleted", message: "All content successfully deleted, may be waiting on finalization" },
      this.remaining > 0
        ? { type: "NamespaceContentRemaining", status: "True", reason: "SomeResourcesRemain", message: `Some resources are remaining: ${listed(this.byResource, (r, n) => `${r} has ${n} resource instances`)}` }
        : { type: "NamespaceContentRemaining", status: "False", reason: "ContentRemoved", message: "All content successfully removed" },
      this.byFinalizer.size > 0
        ? { type: "NamespaceFinalizersRemaining", status: "True", reason: "SomeFinalizersRemain", message: `Some content in the namespace has finalizers remaining: ${listed(this.byFinalizer, (f, n) => `${f} in ${n} resource instances`)}` }
        : { type: "NamespaceFinalizersRemaining", status: "False", reason: "ContentHasNoFinalizers", message: "All content-preserving finalizers finished" },
    ];
  }
}

/**
 * `previous` with `next`'s conditions replacing those of their types; a condition whose status did not change keeps
 * its transition time.
 */
export function mergeConditions(previous: readonly NamespaceCondition[], next: readonly Omit<NamespaceCondition, "lastTransitionTime">[], now: string): NamespaceCondition[] {
  const out = previous.filter((c) => !next.some((n) => n.type === c.type));
  for (const c of next) {
    const old = previous.find((p) => p.type === c.type);
    out.push({ ...c, lastTransitionTime: old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now });
  }
  return out;
}

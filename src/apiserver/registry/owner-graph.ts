// The graph the garbage collector works on: the stored objects with ownerReferences (owner uid → dependents) and the
// owners under a collector's finalizer, kept from stored texts without parsing those that have neither.
import type { ApiObject, OwnerReference } from "../../api/meta.js";
import type { ResourceStore } from "./generic.js";
import { GC_FINALIZERS } from "./generic.js";

/** The finalizers a Foreground and an Orphan delete put on the owner. */
export const FOREGROUND = GC_FINALIZERS["Foreground"]!;
export const ORPHAN = GC_FINALIZERS["Orphan"]!;

/** An object as the graph holds it. */
export interface Node {
  readonly store: ResourceStore;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly uid: string;
  readonly owners: readonly OwnerReference[];
}

/** `/group/plural/[namespace/]name` split by the store that keeps it. */
export interface Located {
  readonly store: ResourceStore;
  readonly namespace: string | undefined;
  readonly name: string;
}

export class OwnerGraph {
  readonly #byPrefix = new Map<string, ResourceStore>();
  /** Objects with owners, by storage key. */
  readonly #nodes = new Map<string, Node>();
  /** Owner uid → the keys of its dependents. */
  readonly #dependents = new Map<string, Set<string>>();
  /** Owners under a collector's finalizer (being deleted with Foreground or Orphan): uid → key. */
  readonly #finalizing = new Map<string, string>();

  constructor(stores: readonly ResourceStore[]) {
    for (const store of stores) this.#byPrefix.set(store.collectionPrefix, store);
  }

  clear(): void {
    this.#nodes.clear();
    this.#dependents.clear();
    this.#finalizing.clear();
  }

  /** Every key with something to look at: the dependents and the finalizing owners. */
  keys(): string[] {
    return [...this.#nodes.keys(), ...this.#finalizing.values()];
  }

  node(key: string): Node | undefined {
    return this.#nodes.get(key);
  }

  /** The keys of an owner's dependents (a copy: writes change the graph while they are looked at). */
  dependents(uid: string): string[] {
    return [...(this.#dependents.get(uid) ?? [])];
  }

  /** Takes a stored object into the graph; true when it has something for the collector to do. */
  observe(key: string, text: string): boolean {
    const had = this.#nodes.get(key);
    // Two scans of the text, no parse, for the objects that neither have owners nor are being deleted (nearly all).
    const owned = text.includes('"ownerReferences"');
    const finalizing = text.includes('"deletionTimestamp"') && (text.includes(`"${FOREGROUND}"`) || text.includes(`"${ORPHAN}"`));
    if (!owned && !finalizing) {
      if (had) this.#forget(key, had);
      return false;
    }
    const at = this.locate(key);
    if (!at) return false;
    const obj = JSON.parse(text) as ApiObject;
    const uid = obj.metadata.uid ?? "";
    if (had) this.#forget(key, had);
    const owners = (obj.metadata.ownerReferences ?? []).filter((o) => typeof o?.uid === "string" && o.uid !== "");
    if (owners.length > 0) {
      this.#nodes.set(key, { ...at, uid, owners });
      for (const o of owners) {
        let set = this.#dependents.get(o.uid);
        if (!set) this.#dependents.set(o.uid, (set = new Set()));
        set.add(key);
      }
    }
    const mine = obj.metadata.deletionTimestamp !== undefined && (obj.metadata.finalizers ?? []).some((f) => f === FOREGROUND || f === ORPHAN);
    if (mine) this.#finalizing.set(uid, key);
    return owners.length > 0 || mine;
  }

  #forget(key: string, node: Node): void {
    this.#nodes.delete(key);
    for (const o of node.owners) {
      const set = this.#dependents.get(o.uid);
      set?.delete(key);
      if (set?.size === 0) this.#dependents.delete(o.uid);
    }
  }

  locate(key: string): Located | undefined {
    const second = key.indexOf("/", key.indexOf("/", 1) + 1);
    const store = this.#byPrefix.get(key.slice(0, second + 1));
    if (!store) return undefined;
    const rest = key.slice(second + 1);
    if (!store.def.namespaced) return { store, namespace: undefined, name: rest };
    const slash = rest.indexOf("/");
    return { store, namespace: rest.slice(0, slash), name: rest.slice(slash + 1) };
  }

  /**
   * A stored object was deleted (`text`, its last value): the keys to look at now — its dependents (their owner is
   * gone), and the owners waiting in the foreground for it.
   */
  removed(key: string, text: string): string[] {
    const node = this.#nodes.get(key);
    if (node) this.#forget(key, node);
    // Only parsed when there are dependents or finalizing owners at all.
    if (this.#dependents.size === 0 && this.#finalizing.size === 0) return [];
    const uid = uidOf(text);
    if (uid === undefined) return [];
    this.#finalizing.delete(uid);
    const keys = this.dependents(uid);
    for (const owner of node?.owners ?? []) {
      const waiting = this.#finalizing.get(owner.uid);
      if (waiting !== undefined) keys.push(waiting);
    }
    return keys;
  }
}

/** The uid of a stored object's text (its metadata's), without keeping the parsed object. */
function uidOf(text: string): string | undefined {
  try {
    return (JSON.parse(text) as ApiObject).metadata?.uid;
  } catch {
    return undefined;
  }
}

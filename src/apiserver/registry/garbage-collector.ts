// Deletes what owners leave behind, as upstream's garbage collector does (run inside the API server, as the namespace
// finalizer is, so a server alone or embedded in a test collects too): a dependent whose every owner is gone is
// deleted; an owner deleted with propagationPolicy Foreground waits under `foregroundDeletion` until its dependents
// that block it are gone; one deleted with Orphan has its reference taken off every dependent, then its `orphan`
// finalizer. The graph is the objects with ownerReferences, kept from the storage's watch (a replica's writes too).
import type { ApiObject, OwnerReference, UserInfo } from "../../api/meta.js";
import { groupOfApiVersion } from "../../api/schema.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { KeyValue, Storage, StorageEvent, Watch } from "../storage/types.js";
import type { Clock } from "../../time/clock.js";
import { KeyedRuns } from "../../time/keyed-runs.js";
import { UNAUDITED, type AuditInternal } from "../audit/internal-requests.js";
import type { ResourceStore } from "./generic.js";
import { FOREGROUND, ORPHAN, OwnerGraph, type Located } from "./owner-graph.js";
import { InvalidOwnerReports, type InvalidOwnerReportsOptions } from "./invalid-owner-reports.js";

const PAGE = 500;
/** Its writes' field manager, and what its audited writes name as their agent. */
const FIELD_MANAGER = "garbage-collector";
const AGENT_COMPONENT = "garbage collector";
/** A failed item is looked at again after this, doubled up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;

export interface GarbageCollectorOptions {
  /** Every kind kept under keys of its own (no views, nothing create-only). */
  readonly stores: readonly ResourceStore[];
  /** Core v1 Events, where it reports invalid references (none: not reported). */
  readonly events?: ResourceStore | undefined;
  readonly storage: Storage;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Who the deletes and patches are made as (they pass admission like any other). */
  readonly user: UserInfo;
  readonly audit?: AuditInternal;
  /** The namespaces' in-memory view (registry's NamespaceStates); without it they are listed from storage. */
  readonly namespaces?: InvalidOwnerReportsOptions["namespaces"];
}

export class GarbageCollector {
  readonly #o: GarbageCollectorOptions;
  readonly #audit: AuditInternal;
  readonly #graph: OwnerGraph;
  /**
   * Keys to look at (dependents and finalizing owners), one run of a key at a time (one asked for meanwhile runs again
   * after); a failed one is looked at again after FIRST_RETRY_MS, doubled per failure up to MAX_RETRY_MS.
   */
  readonly #runs: KeyedRuns;
  #watch: Watch | undefined;
  #closed = false;
  /** While the objects are (re)read the graph is incomplete: an owner's dependents cannot be told from it. */
  #reading = false;
  /** References to an owner that cannot be in the dependent's namespace: looked for, and reported. */
  readonly #invalid: InvalidOwnerReports;

  constructor(options: GarbageCollectorOptions) {
    this.#o = options;
    this.#audit = options.audit ?? UNAUDITED;
    this.#graph = new OwnerGraph(options.stores);
    this.#runs = new KeyedRuns({ clock: options.clock, baseMs: FIRST_RETRY_MS, maxMs: MAX_RETRY_MS, run: (key) => this.#run(key) });
    this.#invalid = new InvalidOwnerReports({
      ...options,
      eachStored: (prefix, visit) => this.#eachStored(prefix, visit),
      create: (at, work) => this.#write("create", at, work),
      fieldManager: FIELD_MANAGER,
    });
  }

  /**
   * Starts in the background (a large store is read without holding up the server's start) and tries again after a
   * failed read.
   */
  begin(): void {
    if (this.#closed) return;
    this.start().catch((err: unknown) => {
      if (this.#closed) return;
      this.#o.logger.warn({ err }, "the garbage collector could not read the objects; trying again");
      this.#o.clock.setTimer(FIRST_RETRY_MS, () => this.begin());
    });
  }

  /** Reads every object once (what a server that stopped left to do is picked up), then follows the storage's watch. */
  async start(): Promise<void> {
    // A second read (after a broken watch) replaces the graph: what was deleted meanwhile must not linger in it.
    this.#watch?.cancel();
    this.#reading = true;
    this.#graph.clear();
    let revision: number;
    try {
      revision = await this.#eachStored("/", (kv) => this.#graph.observe(kv.key, kv.value));
    } finally {
      this.#reading = false;
    }
    if (this.#closed) return;
    for (const key of this.#graph.keys()) this.#runs.schedule(key);
    this.#watch = this.#o.storage.watch(
      "/",
      { fromRevision: revision },
      (ev) => this.#event(ev),
      (err) => {
        // The graph would go stale: read everything again.
        if (this.#closed) return;
        this.#o.logger.warn({ err }, "the garbage collector's watch ended; reading the objects again");
        this.#o.clock.setTimer(FIRST_RETRY_MS, () => this.begin());
      },
    );
  }

  /** Visits every stored key under `prefix`, a page at a time, all at the first page's revision (returned). */
  async #eachStored(prefix: string, visit: (kv: KeyValue) => void): Promise<number> {
    let startAfter: string | undefined;
    let revision = 0;
    for (let more = true; more; ) {
      const page = await this.#o.storage.list(prefix, { limit: PAGE, ...(revision && { revision }), ...(startAfter !== undefined && { startAfter }) });
      revision = page.revision;
      for (const kv of page.items) visit(kv);
      [more, startAfter] = [page.more, page.items.at(-1)?.key];
    }
    return revision;
  }

  close(): void {
    this.#closed = true;
    this.#watch?.cancel();
    this.#runs.close();
  }

  #event(ev: StorageEvent): void {
    if (ev.type === "PUT") {
      if (this.#graph.observe(ev.key, ev.kv.value)) this.#runs.schedule(ev.key);
      return;
    }
    for (const key of this.#graph.removed(ev.key, ev.kv.value)) this.#runs.schedule(key);
  }

  /** Collects one key; true when it failed and must be looked at again. */
  async #run(key: string): Promise<boolean> {
    if (this.#closed) return false;
    try {
      const at = this.#graph.locate(key);
      if (!at) return false;
      let current: ApiObject;
      try {
        current = (await at.store.get(at.namespace, at.name)).object;
      } catch (err) {
        if (isPlatformError(err, "NOT_FOUND")) return false;
        throw err;
      }
      const finalizers = current.metadata.deletionTimestamp !== undefined ? current.metadata.finalizers ?? [] : [];
      if (finalizers.includes(ORPHAN)) await this.#orphan(at, current);
      else if (finalizers.includes(FOREGROUND)) await this.#foreground(at, current);
      if (current.metadata.ownerReferences?.length) await this.#dependent(at, current);
      return false;
    } catch (err) {
      if (this.#closed) return false;
      this.#o.logger.warn({ err, key }, "garbage collection of an object failed; trying again");
      return true;
    }
  }

  /**
   * A dependent: deleted once no owner is left (in the foreground when an owner waits for it and it has dependents
   * of its own); references to owners that are gone or being deleted in the foreground are taken off while another
   * owner remains.
   */
  async #dependent(at: Located, obj: ApiObject): Promise<void> {
    const solid: OwnerReference[] = [];
    const gone: OwnerReference[] = [];
    const waiting: OwnerReference[] = [];
    for (const ref of obj.metadata.ownerReferences ?? []) {
      const state = await this.#ownerState(at, obj, ref);
      (state === "present" ? solid : state === "foreground" ? waiting : gone).push(ref);
    }
    if (solid.length > 0) {
      const drop = new Set([...gone, ...waiting].map((r) => r.uid));
      if (drop.size > 0) await this.#withoutOwners(at, obj, drop);
      return;
    }
    if (obj.metadata.deletionTimestamp !== undefined) return;
    const policy = waiting.length > 0 && this.#graph.dependents(obj.metadata.uid ?? "").length > 0 ? "Foreground" : "Background";
    await this.#write("delete", at, () => at.store.delete(at.namespace, at.name, { user: this.#o.user, preconditions: { uid: obj.metadata.uid ?? "" }, propagationPolicy: policy })).catch((err: unknown) => {
      // Gone meanwhile, or replaced by a new object of the name: nothing of this one is left to delete.
      if (!isPlatformError(err, "NOT_FOUND") && !isPlatformError(err, "CONFLICT")) throw err;
    });
  }

  /** Whether an owner exists (with the uid named), is gone, or is being deleted in the foreground. */
  async #ownerState(at: Located, dependent: ApiObject, ref: OwnerReference): Promise<"present" | "gone" | "foreground"> {
    const group = groupOfApiVersion(ref.apiVersion ?? "");
    const store = this.#o.stores.find((s) => s.def.group === group && s.def.kind === ref.kind);
    // An owner that cannot be resolved — a kind this server does not serve, or a namespaced kind named by a
    // cluster-scoped object — is left alone, as if it existed (upstream's rule since 1.20); the second is reported.
    if (!store) return "present";
    if (store.def.namespaced && at.namespace === undefined) {
      await this.#invalid.report(at, dependent, ref);
      return "present";
    }
    let owner: ApiObject | undefined;
    try {
      owner = (await store.get(store.def.namespaced ? at.namespace : undefined, ref.name)).object;
    } catch (err) {
      if (!isPlatformError(err, "NOT_FOUND")) throw err;
    }
    if (owner === undefined || owner.metadata.uid !== ref.uid) {
      // Gone from the dependent's namespace, as upstream decides too; an owner of that uid in another namespace is
      // reported (owners and dependents share a namespace).
      if (store.def.namespaced) await this.#invalid.reportIfElsewhere(store, at, dependent, ref);
      return "gone";
    }
    const foreground = owner.metadata.deletionTimestamp !== undefined && (owner.metadata.finalizers ?? []).includes(FOREGROUND);
    return foreground ? "foreground" : "present";
  }

  /** Orphan: every dependent loses its reference to the owner, then the owner its finalizer (and goes, if no other holds it). */
  async #orphan(at: Located, owner: ApiObject): Promise<void> {
    this.#graphComplete();
    const uid = owner.metadata.uid ?? "";
    for (const key of this.#graph.dependents(uid)) {
      const dep = this.#graph.locate(key);
      if (!dep) continue;
      try {
        const obj = (await dep.store.get(dep.namespace, dep.name)).object;
        await this.#withoutOwners(dep, obj, new Set([uid]));
      } catch (err) {
        if (!isPlatformError(err, "NOT_FOUND")) throw err;
      }
    }
    await this.#dropFinalizer(at, ORPHAN);
  }

  /** Foreground: the dependents are deleted (each looks at its owners); the owner goes once none that blocks it is left. */
  async #foreground(at: Located, owner: ApiObject): Promise<void> {
    this.#graphComplete();
    const uid = owner.metadata.uid ?? "";
    const keys = this.#graph.dependents(uid);
    for (const key of keys) this.#runs.schedule(key);
    const blocking = keys.some((k) => this.#graph.node(k)?.owners.some((o) => o.uid === uid && o.blockOwnerDeletion === true));
    if (!blocking) await this.#dropFinalizer(at, FOREGROUND);
  }

  /** An owner's finalizer goes only on a complete graph: one being read again could miss its dependents. */
  #graphComplete(): void {
    if (this.#reading) throw new PlatformError("STORAGE_UNAVAILABLE", "the garbage collector is reading the objects again", { retryable: true });
  }

  /** The object without its references to these owners. */
  async #withoutOwners(at: Located, obj: ApiObject, uids: ReadonlySet<string>): Promise<void> {
    await this.#write("patch", at, () =>
      at.store.patch(at.namespace, at.name, (cur) => {
        if (cur.metadata.uid !== obj.metadata.uid) return cur;
        const kept = (cur.metadata.ownerReferences ?? []).filter((r) => !uids.has(r.uid));
        return { ...cur, metadata: { ...cur.metadata, ownerReferences: kept } };
      }, { user: this.#o.user, fieldManager: FIELD_MANAGER }),
    );
  }

  async #dropFinalizer(at: Located, finalizer: string): Promise<void> {
    await this.#write("patch", at, () =>
      at.store.patch(at.namespace, at.name, (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: (cur.metadata.finalizers ?? []).filter((f) => f !== finalizer) } }), {
        user: this.#o.user,
        fieldManager: FIELD_MANAGER,
      }),
    );
  }

  /** One audited write of the collector's. */
  #write<T extends { object: ApiObject }>(verb: "create" | "delete" | "patch", at: Located, work: () => Promise<T>): Promise<T> {
    return this.#audit({ verb, def: at.store.def, ...(at.namespace !== undefined && { namespace: at.namespace }), name: at.name, user: this.#o.user, component: AGENT_COMPONENT }, work, (r) => r.object);
  }
}

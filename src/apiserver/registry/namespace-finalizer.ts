// Empties a namespace being deleted, then takes its `kubernetes` finalizer off so the namespace goes (upstream's
// namespace controller, run inside the server: a server alone — `apiserver`, one embedded in a test — ends deletions too).
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { Namespace } from "../../api/types/core.js";
import { isPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Storage } from "../storage/types.js";
import type { CancelTimer, Clock } from "../../time/clock.js";
import { KeyedRuns } from "../../time/keyed-runs.js";
import type { ResourceStore } from "./generic.js";
import { NAMESPACE_FINALIZER } from "./resources/namespace.js";
import { StoredObject } from "./stored.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { Leftovers, mergeConditions } from "./namespace-conditions.js";
import { UNAUDITED, type AuditInternal } from "../audit/internal-requests.js";

/** First wait before a namespace whose content could not all be deleted is tried again; doubled up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 60_000;
const PAGE = 500;
/** How often every namespace being deleted is looked for: one another server (a replica) marked and left is taken up. */
const SWEEP_MS = 60_000;
/** What its audited writes name as their agent, as upstream's namespace controller sends them. */
const COMPONENT = "namespace controller";

export interface NamespaceFinalizerOptions {
  readonly namespaces: ResourceStore;
  /** The stores of every namespaced kind kept under keys of its own (not a view of another kind's). */
  readonly contents: readonly ResourceStore[];
  readonly storage: Storage;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Who the deletes are made as (they pass admission like any other). */
  readonly user: UserInfo;
  /** Each write in the audit log, as a request (none: not audited). */
  readonly audit?: AuditInternal;
}

export class NamespaceFinalizer {
  readonly #o: NamespaceFinalizerOptions;
  /**
   * One run per namespace at a time (one asked for meanwhile runs again after); a failed or waiting one is looked at
   * again after FIRST_RETRY_MS, doubled per failure up to MAX_RETRY_MS.
   */
  readonly #runs: KeyedRuns;
  #closed = false;
  #sweep: CancelTimer | undefined;

  readonly #audit: AuditInternal;

  constructor(options: NamespaceFinalizerOptions) {
    this.#o = options;
    this.#audit = options.audit ?? UNAUDITED;
    this.#runs = new KeyedRuns({ clock: options.clock, baseMs: FIRST_RETRY_MS, maxMs: MAX_RETRY_MS, run: (name) => this.#run(name) });
  }

  /** Empties `name` soon (or after `delayMs`); a namespace already waiting keeps its turn. */
  schedule(name: string, delayMs = 0): void {
    this.#runs.schedule(name, delayMs);
  }

  /**
   * Schedules every namespace already being deleted (a server that stopped half-way resumes the work), now and then
   * every SWEEP_MS, so that a namespace another server marked and did not finish is taken up here.
   */
  async resume(): Promise<void> {
    this.#sweep?.();
    if (this.#closed) return;
    this.#sweep = this.#o.clock.setTimer(SWEEP_MS, () => {
      this.resume().catch((err: unknown) => this.#o.logger.warn({ err }, "looking for namespaces being deleted failed; the next sweep tries again"));
    });
    let startAfter: string | undefined;
    for (let more = true; more; ) {
      const page = await this.#o.storage.list(this.#o.namespaces.prefix(), { limit: PAGE, ...(startAfter !== undefined && { startAfter }) });
      for (const kv of page.items) if (StoredObject.of(kv).object.metadata.deletionTimestamp !== undefined) this.schedule(kv.key.slice(this.#o.namespaces.prefix().length));
      [more, startAfter] = [page.more, page.items.at(-1)?.key];
    }
  }

  close(): void {
    this.#closed = true;
    this.#sweep?.();
    this.#runs.close();
  }

  /** Empties and finalizes one namespace; true when it must be looked at again (content left, or a failure). */
  async #run(name: string): Promise<boolean> {
    let retry = false;
    try {
      let left = await this.#deleteContent(name);
      // The second pass deletes what a create admitted just before the namespace was marked stored after the first listed.
      if (left.remaining === 0) left = await this.#deleteContent(name);
      if (left.remaining === 0) await this.#finalize(name);
      else {
        retry = true;
        this.#o.logger.info({ namespace: name, remaining: left.remaining }, "namespace deletion waits for content that is still there (finalizers, refused deletes)");
        await this.#report(name, left);
      }
    } catch (err) {
      if (!isPlatformError(err, "NOT_FOUND")) {
        retry = true;
        this.#o.logger.warn({ err, namespace: name }, "namespace deletion failed; it is tried again");
      }
    }
    return retry;
  }

  /** Deletes every object in the namespace; answers what is left (held by finalizers, or refused). */
  async #deleteContent(namespace: string): Promise<Leftovers> {
    const left = new Leftovers();
    for (const store of this.#o.contents) {
      const prefix = store.prefix(namespace);
      const resource = `${store.def.plural}.${store.def.group}`;
      let startAfter: string | undefined;
      for (let more = true; more; ) {
        const page = await this.#o.storage.list(prefix, { limit: PAGE, ...(startAfter !== undefined && { startAfter }) });
        for (const kv of page.items) {
          const name = kv.key.slice(prefix.length);
          try {
            const r = await this.#audit({ verb: "delete", def: store.def, namespace, name, user: this.#o.user, component: COMPONENT }, () => store.delete(namespace, name, { user: this.#o.user }), (d) => d.object);
            if (!r.deleted) left.add(resource, r.object.metadata.finalizers ?? []);
          } catch (err) {
            if (isPlatformError(err, "NOT_FOUND")) continue;
            left.add(resource, [], `${resource} "${name}": ${(err as Error).message}`);
            this.#o.logger.warn({ err, namespace, key: kv.key }, "an object of a namespace being deleted could not be deleted");
          }
        }
        [more, startAfter] = [page.more, page.items.at(-1)?.key];
      }
    }
    return left;
  }

  /** Says in the namespace's status conditions what holds it (written only when they change). */
  async #report(name: string, left: Leftovers): Promise<void> {
    const now = rfc3339(new Date(this.#o.clock.now()));
    await this.#update(name, "status", (current) => {
      const status = (current as Namespace).status ?? {};
      return { ...current, status: { ...status, conditions: mergeConditions(status.conditions ?? [], left.conditions(), now) } };
    });
  }

  /**
   * Takes the namespace's finalizer off through /finalize, which removes the namespace when nothing else holds it; one
   * without that finalizer (stored before it was added) is deleted again, which removes it the same way.
   */
  async #finalize(name: string): Promise<void> {
    const current = (await this.#o.namespaces.get(undefined, name)).object as Namespace;
    const namespaces = this.#o.namespaces;
    if (!(current.spec?.finalizers ?? []).includes(NAMESPACE_FINALIZER)) {
      await this.#audit({ verb: "delete", def: namespaces.def, name, user: this.#o.user, component: COMPONENT }, () => namespaces.delete(undefined, name, { user: this.#o.user }), (d) => d.object);
      return;
    }
    await this.#update(name, "finalize", (current) => {
      const spec = (current as Namespace).spec ?? {};
      return { ...current, spec: { ...spec, finalizers: (spec.finalizers ?? []).filter((f) => f !== NAMESPACE_FINALIZER) } };
    });
    this.#o.logger.info({ namespace: name }, "namespace emptied and finalized");
  }

  /** Writes the namespace's `subresource` as `change` makes it from the current one (an audited update). */
  async #update(name: string, subresource: "status" | "finalize", change: (current: ApiObject) => ApiObject): Promise<void> {
    const namespaces = this.#o.namespaces;
    const user = this.#o.user;
    await this.#audit({ verb: "update", def: namespaces.def, name, subresource, user, component: COMPONENT }, () => namespaces.patch(undefined, name, change, { user, subresource, fieldManager: "namespace-controller" }), (r) => r.object);
  }
}

// Upstream's OwnerRefInvalidNamespace for the garbage collector: a dependent whose namespaced owner cannot be in its
// namespace (a cluster-scoped dependent, or an owner that lives in another namespace), reported with a Warning Event.
import { randomBytes } from "node:crypto";
import type { ApiObject, OwnerReference, UserInfo } from "../../api/meta.js";
import { isPlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { KeyValue } from "../storage/types.js";
import type { Clock } from "../../time/clock.js";
import { rfc3339 } from "../../time/rfc3339.js";
import type { ResourceStore } from "./generic.js";
import type { NamespaceStates } from "./namespace-states.js";
import type { Located } from "./owner-graph.js";

/** The Events' source, as upstream's garbage collector names itself. */
const GC_COMPONENT = "garbage-collector-controller";
/** Owner uids remembered as found, or not, in another namespace (a uid names one object, so the answer holds). */
const ELSEWHERE_MEMO = 10_000;

export interface InvalidOwnerReportsOptions {
  /** Every kind the collector looks at (the Namespaces' among them, listed when the view below is not current). */
  readonly stores: readonly ResourceStore[];
  /** Core v1 Events, where the reports go (none: not reported). */
  readonly events?: ResourceStore | undefined;
  /** The namespaces' in-memory view (registry's NamespaceStates); without it they are listed from storage. */
  readonly namespaces?: Pick<NamespaceStates, "names" | "lookup"> | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly user: UserInfo;
  readonly fieldManager: string;
  /** Visits every stored key under a prefix (the collector's paged read). */
  readonly eachStored: (prefix: string, visit: (kv: KeyValue) => void) => Promise<number>;
  /** The collector's audited create. */
  readonly create: (at: Located, work: () => Promise<{ object: ApiObject }>) => Promise<unknown>;
}

/** `<dependent uid>/<owner uid>`: what one report is about. */
const reportKey = (dependent: ApiObject, ref: OwnerReference): string => `${dependent.metadata.uid ?? ""}/${ref.uid}`;

export class InvalidOwnerReports {
  readonly #o: InvalidOwnerReportsOptions;
  /** reportKey of the invalid references already reported with an Event. */
  readonly #reported = new Set<string>();
  /** Owner uid → whether an object of that uid lives in another namespace than the dependent that named it. */
  readonly #elsewhere = new Map<string, boolean>();

  constructor(options: InvalidOwnerReportsOptions) {
    this.#o = options;
  }

  /**
   * A namespaced dependent's reference found dangling in its namespace: reported when an object of the owner's kind,
   * name and uid lives in another namespace. Looked for only when a report could still be made (an Events store, the
   * reference not reported yet).
   */
  async reportIfElsewhere(store: ResourceStore, at: Located, dependent: ApiObject, ref: OwnerReference): Promise<void> {
    if (!this.#o.events || this.#reported.has(reportKey(dependent, ref))) return;
    if (await this.#inOtherNamespace(store, at.namespace!, ref)) await this.report(at, dependent, ref);
  }

  /**
   * Whether an object of the owner's kind, name and uid lives in a namespace other than `namespace`: one read per
   * namespace, once per owner uid (the collector's graph keeps no index of every object's uid). A namespace being
   * deleted takes its objects with it: nothing is looked for there.
   */
  async #inOtherNamespace(store: ResourceStore, namespace: string, ref: OwnerReference): Promise<boolean> {
    const view = this.#o.namespaces;
    if (view?.lookup(namespace) === "terminating") return false;
    const known = this.#elsewhere.get(ref.uid);
    if (known !== undefined) return known;
    let found = false;
    for (const other of view?.names() ?? (await this.#storedNamespaces())) {
      if (other === namespace) continue;
      try {
        if ((await store.get(other, ref.name)).object.metadata.uid === ref.uid) {
          found = true;
          break;
        }
      } catch (err) {
        if (!isPlatformError(err, "NOT_FOUND")) throw err;
      }
    }
    if (this.#elsewhere.size >= ELSEWHERE_MEMO) this.#elsewhere.clear();
    this.#elsewhere.set(ref.uid, found);
    return found;
  }

  /** The namespaces' names as stored (when the registry's view is absent or not current). */
  async #storedNamespaces(): Promise<string[]> {
    const namespaces = this.#o.stores.find((s) => s.def.group === "" && s.def.kind === "Namespace");
    if (!namespaces) return [];
    const prefix = namespaces.collectionPrefix;
    const names: string[] = [];
    await this.#o.eachStored(prefix, (kv) => names.push(kv.key.slice(prefix.length)));
    return names;
  }

  /**
   * Upstream's Warning Event `OwnerRefInvalidNamespace` on the dependent: a cluster-scoped one's in `default`, a
   * namespaced one's in its own namespace (`kubectl get events -A --field-selector reason=OwnerRefInvalidNamespace`
   * finds them). Once per reference; an Event that cannot be written is logged, and the collection goes on.
   */
  async report(at: Located, dependent: ApiObject, ref: OwnerReference): Promise<void> {
    const key = reportKey(dependent, ref);
    const events = this.#o.events;
    if (this.#reported.has(key) || !events) return;
    this.#reported.add(key);
    const now = rfc3339(new Date(this.#o.clock.now()));
    const own = at.namespace ?? "";
    const namespace = at.namespace ?? "default";
    const name = `${at.name}.${randomBytes(8).toString("hex")}`;
    const event: ApiObject = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace },
      involvedObject: { apiVersion: at.store.apiVersion, kind: at.store.def.kind, ...(at.namespace !== undefined && { namespace: at.namespace }), name: at.name, uid: dependent.metadata.uid },
      reason: "OwnerRefInvalidNamespace",
      message: `ownerRef [${ref.apiVersion}/${ref.kind}, namespace: ${own}, name: ${ref.name}, uid: ${ref.uid}] does not exist in namespace "${own}"`,
      type: "Warning",
      source: { component: GC_COMPONENT },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await this.#o.create({ store: events, namespace, name }, () => events.create(namespace, event, { user: this.#o.user, fieldManager: this.#o.fieldManager }));
    } catch (err) {
      this.#o.logger.warn({ err, key: at.name }, "the garbage collector could not record an OwnerRefInvalidNamespace event");
    }
  }
}

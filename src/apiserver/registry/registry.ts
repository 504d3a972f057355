// The set of served resources: one ResourceStore per definition, create handlers, and the namespaces every server starts with.
import type { ApiObject } from "../../api/meta.js";
import type { GroupNames } from "../../api/group.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import type { Storage } from "../storage/types.js";
import { withViews } from "../storage/view.js";
import type { Pipeline } from "../pipeline.js";
import { ApiCatalog } from "../discovery.js";
import type { CreateHandler, ResourceDefinition } from "./strategy.js";
import { ResourceStore } from "./generic.js";
import { qualifiedResource } from "./errors.js";
import { NamespaceStates, stateOf, type NamespaceState } from "./namespace-states.js";
import { NamespaceFinalizer } from "./namespace-finalizer.js";
import { GarbageCollector } from "./garbage-collector.js";
import { UNAUDITED, type AuditInternal } from "../audit/internal-requests.js";

/**
 * Namespaces created on first start: the default one and the one the platform's own objects live in; the naming
 * profile adds its system namespaces (upstream's under k8s.io).
 */
export const BOOTSTRAP_NAMESPACES = ["default", "platform-system"] as const;

/** Upstream's --event-ttl default: an Event is kept an hour after its last write. */
export const DEFAULT_EVENT_TTL_SECONDS = 3600;

/** The identity of the server's own writes. */
const SERVER_USER = { username: "system:apiserver", groups: ["system:masters"] };

export interface RegistryOptions {
  readonly storage: Storage;
  readonly names: GroupNames;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly pipeline: Pipeline;
  readonly definitions: readonly ResourceDefinition[];
  /** --event-ttl in seconds (0: Events are kept until deleted); default an hour. */
  readonly eventTtlSeconds?: number;
  /** Puts the server's own writes (a namespace emptied) in the audit log; default: not audited. */
  readonly audit?: AuditInternal;
}

export class Registry {
  readonly catalog: ApiCatalog;
  /** Puts the server's own writes in the audit log (not audited without an auditor). */
  readonly audit: AuditInternal;
  readonly #stores = new Map<ResourceDefinition, ResourceStore>();
  readonly #handlers = new Map<string, CreateHandler>();
  readonly #namespaces: ResourceStore | undefined;
  /** What each namespace's state is, kept from storage's watch: a namespaced create reads storage only on a miss. */
  readonly #namespaceStates: NamespaceStates | undefined;
  readonly #storage: Storage;
  /** Empties namespaces being deleted, then finalizes them. */
  readonly #finalizer: NamespaceFinalizer | undefined;
  /** Deletes dependents whose owners are gone (ownerReferences, propagationPolicy). */
  readonly #collector: GarbageCollector;

  constructor(private readonly options: RegistryOptions) {
    this.audit = options.audit ?? UNAUDITED;
    this.catalog = new ApiCatalog(options.definitions, options.names);
    // Kinds served over another kind's stored objects see them through a view of the storage.
    this.#storage = withViews(options.storage, options.definitions.flatMap((d) => (d.storedAs ? [d.storedAs] : [])));
    const ctx = {
      storage: this.#storage,
      names: options.names,
      clock: options.clock,
      logger: options.logger,
      admit: options.pipeline.admit.bind(options.pipeline),
      eventTtlSeconds: options.eventTtlSeconds ?? DEFAULT_EVENT_TTL_SECONDS,
      namespace: (ns: string) => this.namespace(ns),
      deletionMarked: (def: ResourceDefinition, name: string) => {
        if (def === this.#namespaces?.def) this.#finalizer?.schedule(name);
      },
    };
    for (const def of options.definitions) this.#stores.set(def, new ResourceStore(def, ctx));
    const nsDef = options.definitions.find((d) => d.group === "" && d.kind === "Namespace");
    this.#namespaces = nsDef ? this.#stores.get(nsDef) : undefined;
    this.#namespaceStates = this.#namespaces && new NamespaceStates({
      storage: this.#storage,
      prefix: this.#namespaces.collectionPrefix,
      clock: options.clock,
      logger: options.logger,
    });
    this.#finalizer = this.#namespaces && new NamespaceFinalizer({
      namespaces: this.#namespaces,
      // A view's objects are another kind's, deleted with that kind.
      contents: [...this.#stores.values()].filter((s) => s.def.namespaced && !s.def.createOnly && !s.def.storedAs),
      storage: this.#storage,
      clock: options.clock,
      logger: options.logger,
      user: SERVER_USER,
      audit: this.audit,
    });
    this.#collector = new GarbageCollector({
      stores: [...this.#stores.values()].filter((s) => !s.def.createOnly && !s.def.storedAs),
      events: [...this.#stores.values()].find((s) => s.def.group === "" && s.def.kind === "Event"),
      storage: this.#storage,
      clock: options.clock,
      logger: options.logger,
      user: SERVER_USER,
      audit: this.audit,
      namespaces: this.#namespaceStates,
    });
  }

  /** Stops the background work (namespaces being emptied are resumed by the next start). */
  close(): void {
    this.#namespaceStates?.stop();
    this.#finalizer?.close();
    this.#collector.close();
  }

  /** The storage as the served resources see it (views included). */
  get storage(): Storage {
    return this.#storage;
  }

  get names(): GroupNames {
    return this.options.names;
  }

  store(def: ResourceDefinition): ResourceStore {
    const s = this.#stores.get(def);
    if (!s) throw new PlatformError("NOT_FOUND", `${qualifiedResource(def)} is not served`);
    return s;
  }

  /**
   * Serves a create-only kind (`resource` = plural) or an action subresource (`resource` = `plural/action`) of `group`.
   * Replaces an earlier handler for the same slot.
   */
  registerCreateHandler(group: string, resource: string, handler: CreateHandler): void {
    this.#handlers.set(`${group}/${resource}`, handler);
  }

  createHandler(group: string, resource: string): CreateHandler {
    const handler = this.#handlers.get(`${group}/${resource}`);
    if (!handler) throw new PlatformError("NOT_FOUND", `${resource}${group ? `.${group}` : ""} is not served: no handler registered`);
    return handler;
  }

  private async namespace(namespace: string): Promise<NamespaceState | undefined> {
    // Without the Namespace kind served, every namespace exists and none is being deleted.
    if (!this.#namespaces) return "active";
    const known = this.#namespaceStates?.lookup(namespace);
    if (known) return known;
    try {
      const stored = await this.#namespaces.get(undefined, namespace);
      return stateOf(stored.text) ?? (stored.object.metadata.deletionTimestamp !== undefined ? "terminating" : "active");
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
  }

  /**
   * Creates the bootstrap namespaces that do not exist yet (idempotent across restarts), resumes namespace deletions,
   * and starts the garbage collector.
   */
  async bootstrap(): Promise<void> {
    this.#collector.begin();
    if (!this.#namespaces) return;
    // Without its first list the view stays empty and every namespaced create reads storage, as before it.
    await this.#namespaceStates?.start().catch((err: unknown) => this.options.logger.warn({ err }, "namespace cache could not list the namespaces; namespaced creates read storage"));
    for (const name of [...BOOTSTRAP_NAMESPACES, ...this.options.names.systemNamespaces]) {
      const ns: ApiObject = { apiVersion: "v1", kind: "Namespace", metadata: { name } };
      try {
        await this.#namespaces.create(undefined, ns, { fieldManager: "platform-ca-apiserver", user: SERVER_USER });
        this.options.logger.info({ namespace: name }, "namespace created");
      } catch (err) {
        if (!isPlatformError(err, "ALREADY_EXISTS")) throw err;
      }
    }
    await this.#finalizer?.resume();
  }
}

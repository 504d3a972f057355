// The generic registry: get, create, update, patch and delete of any ResourceDefinition over Storage, with upstream semantics.
import { isDeepStrictEqual } from "node:util";
import type { ApiObject, Status } from "../../api/meta.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { isStorableKey, keyRoomProblem } from "../storage/checks.js";
import type { FieldError, ResourceDefinition, StrategyContext, SubresourceStrategy } from "./strategy.js";
import { alreadyExists, badRequest, conflict, forbidden, invalid, invalidOne, notFound } from "./errors.js";
import { FieldManager, type Writer } from "../apply/field-manager.js";
import { schemaRegistry } from "../../api/schema.js";
import { generateName, initCreateMetadata, keepSystemMetadata, validateMetadata } from "./metadata.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { checkApplyBody, checkBody, dropEmptyMetadata, requestAttributes } from "./write-request.js";
import type { ApplyOptions, DeleteOptions, DeleteResult, Mutation, RegistryContext, WriteOptions, WriteResult } from "./store-types.js";
import { serializeForStorage, StoredObject, withResourceVersion } from "./stored.js";
import { copyPlain } from "../../plain-data.js";

const GENERATE_NAME_ATTEMPTS = 8;
const UPDATE_ATTEMPTS = 10;
/** Apply retries when the object it found missing was created meanwhile (and the other way round). */
const APPLY_ATTEMPTS = 3;
const DEFAULT_MANAGER = "unknown";

/** The finalizer a delete with this propagation policy puts on the object for the garbage collector (upstream's). */
export const GC_FINALIZERS: Readonly<Record<string, string | undefined>> = { Foreground: "foregroundDeletion", Orphan: "orphan" };

/** The storage prefix of every object of a resource: `/<group or "core">/<plural>/`. */
export function collectionPrefix(group: string, plural: string): string {
  return `/${group || "core"}/${plural}/`;
}

export class ResourceStore {
  readonly apiVersion: string;
  readonly collectionPrefix: string;
  /** managedFields of every write, and apply. */
  private readonly fields: FieldManager;
  /** Each write's time to live in storage (Events: --event-ttl); undefined, kept until deleted. */
  private readonly ttlSeconds: number | undefined;

  constructor(
    readonly def: ResourceDefinition,
    private readonly ctx: RegistryContext,
  ) {
    this.apiVersion = def.group ? `${def.group}/${def.version}` : def.version;
    this.collectionPrefix = collectionPrefix(def.group, def.plural);
    this.fields = new FieldManager(schemaRegistry(ctx.names).lookup(def.group, def.kind), this.apiVersion, def.strategy.subresources?.status !== undefined);
    this.ttlSeconds = def.expiresWithEventTtl && ctx.eventTtlSeconds > 0 ? ctx.eventTtlSeconds : undefined;
  }

  /** The storage prefix of a namespace's objects, or of every object when no namespace is given. */
  prefix(namespace?: string): string {
    return this.def.namespaced && namespace ? `${this.collectionPrefix}${namespace}/` : this.collectionPrefix;
  }

  key(namespace: string | undefined, name: string): string {
    return this.def.namespaced ? `${this.collectionPrefix}${namespace ?? ""}/${name}` : `${this.collectionPrefix}${name}`;
  }

  async get(namespace: string | undefined, name: string): Promise<StoredObject> {
    const key = this.key(namespace, name);
    // A name (or namespace) no key can hold names no object: missing like any other, without storage detail.
    if (!isStorableKey(key)) throw notFound(this.def, name);
    const kv = await this.ctx.storage.get(key);
    if (!kv) throw notFound(this.def, name);
    return StoredObject.of(kv);
  }

  async create(namespace: string | undefined, body: unknown, opts: WriteOptions): Promise<WriteResult> {
    return this.createChecked(namespace, this.checkBody(body, namespace, undefined), opts, true);
  }

  /** `manageFields`: record the creator's fields as an update from nothing (false: apply has set managedFields). */
  private async createChecked(namespace: string | undefined, obj: ApiObject, opts: WriteOptions, manageFields: boolean): Promise<WriteResult> {
    if (this.def.namespaced) await this.checkNamespace(namespace!, obj.metadata.name ?? "");
    const now = new Date(this.ctx.clock.now());
    const sctx = this.strategyContext(now, opts);
    const explicitName = typeof obj.metadata.name === "string" && obj.metadata.name !== "";
    const prefix = obj.metadata.generateName;
    if (!explicitName && typeof prefix === "string" && prefix !== "") obj.metadata.name = generateName(prefix);
    initCreateMetadata(obj, now);
    // As upstream, the writer owns what it sent: fields the strategy then sets (the requester's identity) are no one's.
    if (manageFields) this.guard(() => this.fields.update(undefined, obj, this.writer(now, opts)));
    this.guard(() => this.def.strategy.prepareForCreate(obj, sctx));
    const ahead = this.def.strategy.checkAhead?.(obj);
    if (ahead !== undefined) await ahead;
    const admitted = this.ctx.admit(requestAttributes(this.def, "create", opts, namespace, obj.metadata.name), obj, undefined);
    if (admitted !== undefined) await admitted;
    this.validate(obj, [...this.metadataProblems(namespace, obj.metadata), ...this.guard(() => this.def.strategy.validate(obj, sctx))]);
    // Created, dry run or not (upstream's create handler answers 201 either way; so does an apply that creates).
    if (opts.dryRun) return { object: obj, code: 201 };
    for (let attempt = 1; ; attempt++) {
      try {
        const text = serializeForStorage(obj);
        const kv = await this.ctx.storage.create(this.key(namespace, obj.metadata.name!), text, this.ttlSeconds);
        obj.metadata.resourceVersion = String(kv.modRevision);
        return { object: obj, code: 201, json: withResourceVersion(text, kv.modRevision) };
      } catch (err) {
        if (!isPlatformError(err, "ALREADY_EXISTS")) throw err;
        // A generated name collided: draw another suffix, as upstream retries.
        if (explicitName || attempt >= GENERATE_NAME_ATTEMPTS) throw alreadyExists(this.def, obj.metadata.name!);
        obj.metadata.name = generateName(prefix!);
      }
    }
  }

  /** PUT: replace with `body`; a resourceVersion in the body is a precondition, none means unconditional. */
  async update(namespace: string | undefined, name: string, body: unknown, opts: WriteOptions): Promise<WriteResult> {
    const next = this.checkBody(body, namespace, name);
    const precondition = next.metadata.resourceVersion;
    // With a precondition there is one attempt (a conflict is the caller's to resolve), so a body the call owns is the
    // next object itself; otherwise each attempt starts from a fresh copy of it.
    return this.write(namespace, name, opts, precondition, precondition !== undefined && opts.ownBody === true ? () => next : () => copyPlain(next));
  }

  /** PATCH: `mutation` applies the patch to a copy of the current object; retried on a concurrent write. */
  patch(namespace: string | undefined, name: string, mutation: Mutation, opts: WriteOptions): Promise<WriteResult> {
    return this.write(namespace, name, opts, undefined, (current) => {
      const next = this.checkBody(mutation(copyPlain(current)), namespace, name);
      const rv = next.metadata.resourceVersion;
      // A patch that sets a resourceVersion makes it a precondition, as upstream does.
      if (rv !== undefined && rv !== current.metadata.resourceVersion) throw conflict(this.def, name);
      return next;
    });
  }

  /**
   * Server-side apply: `config` (an object of this kind) merged into the stored object, or created when there is
   * none, under the field ownership rules (409 on conflicts unless forced).
   */
  async apply(namespace: string | undefined, name: string, config: unknown, opts: ApplyOptions): Promise<WriteResult> {
    const cfg = checkApplyBody(this.def, this.apiVersion, config, namespace, name);
    // The merged object keeps an empty map its configuration names (not dropEmptyMetadata): the appliers' field sets
    // own it, and dropping it would leave an owned field missing, a conflict for the next applier naming it.
    const applied = (live: ApiObject | undefined) =>
      checkBody(this.def, this.apiVersion, this.guard(() => this.fields.apply(live, copyPlain(cfg), this.writer(new Date(this.ctx.clock.now()), opts), opts.force)), namespace, name);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.write(namespace, name, opts, undefined, applied, false);
      } catch (err) {
        if (!isPlatformError(err, "NOT_FOUND") || opts.subresource !== undefined || (await this.exists(namespace, name))) throw err;
      }
      try {
        return await this.createChecked(namespace, applied(undefined), opts, false);
      } catch (err) {
        if (!isPlatformError(err, "ALREADY_EXISTS") || attempt >= APPLY_ATTEMPTS) throw err;
      }
    }
  }

  private async exists(namespace: string | undefined, name: string): Promise<boolean> {
    const key = this.key(namespace, name);
    return isStorableKey(key) && (await this.ctx.storage.get(key)) !== undefined;
  }

  private async write(namespace: string | undefined, name: string, opts: WriteOptions, precondition: string | undefined, produce: Mutation, manageFields = true): Promise<WriteResult> {
    const sub = this.subresourceStrategy(opts.subresource);
    for (let attempt = 1; ; attempt++) {
      const stored = await this.get(namespace, name);
      if (precondition !== undefined && precondition !== String(stored.revision)) {
        if (!/^\d+$/.test(precondition)) throw invalidOne(this.def, name, "metadata.resourceVersion", `Invalid value: ${JSON.stringify(precondition)}: must be a decimal revision`);
        throw conflict(this.def, name);
      }
      const previous = stored.object;
      const next = produce(previous);
      const now = new Date(this.ctx.clock.now());
      const sctx = this.strategyContext(now, opts);
      const immutableErrors = keepSystemMetadata(next, previous);
      if (manageFields) this.guard(() => this.fields.update(previous, next, this.writer(now, opts)));
      if (sub) this.guard(() => sub.prepareForUpdate(next, previous, sctx));
      else {
        this.guard(() => this.def.strategy.prepareForUpdate(next, previous, sctx));
        if (this.def.strategy.specChanged?.(next, previous)) next.metadata.generation = (previous.metadata.generation ?? 0) + 1;
      }
      const admitted = this.ctx.admit(requestAttributes(this.def, "update", opts, namespace, name), next, previous);
      if (admitted !== undefined) await admitted;
      const errors = sub
        ? [...immutableErrors, ...validateMetadata(this.def, next.metadata), ...this.guard(() => sub.validateUpdate(next, previous, sctx))]
        : [
            ...immutableErrors,
            ...validateMetadata(this.def, next.metadata),
            ...this.guard(() => this.def.strategy.validate(next, sctx)),
            ...this.guard(() => this.def.strategy.validateUpdate(next, previous, sctx)),
          ];
      this.validate(next, errors);
      if (unchanged(next, previous)) return { object: previous, code: 200 };
      const finalized = next.metadata.deletionTimestamp !== undefined && !(next.metadata.finalizers?.length) && !this.def.strategy.deletion?.pending(next);
      if (opts.dryRun) return { object: next, code: 200 };
      try {
        if (finalized) {
          // The last finalizer is gone from an object being deleted: the delete completes now.
          await this.ctx.storage.delete(stored.key, stored.revision);
          next.metadata.resourceVersion = String(stored.revision);
          return { object: next, code: 200 };
        }
        const text = serializeForStorage(next);
        const kv = await this.ctx.storage.update(stored.key, text, stored.revision, this.ttlSeconds);
        next.metadata.resourceVersion = String(kv.modRevision);
        return { object: next, code: 200, json: withResourceVersion(text, kv.modRevision) };
      } catch (err) {
        if (isPlatformError(err, "NOT_FOUND")) throw notFound(this.def, name);
        if (!isPlatformError(err, "CONFLICT")) throw err;
        if (precondition !== undefined || attempt >= UPDATE_ATTEMPTS) throw conflict(this.def, name);
      }
    }
  }

  async delete(namespace: string | undefined, name: string, opts: DeleteOptions): Promise<DeleteResult> {
    for (let attempt = 1; ; attempt++) {
      const stored = await this.get(namespace, name);
      const current = stored.object;
      const pre = opts.preconditions;
      if (pre?.uid !== undefined && pre.uid !== current.metadata.uid) {
        throw conflict(this.def, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid ?? ""}`);
      }
      if (pre?.resourceVersion !== undefined && pre.resourceVersion !== String(stored.revision)) {
        throw conflict(this.def, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in meta: ${stored.revision}`);
      }
      const admitted = this.ctx.admit(requestAttributes(this.def, "delete", opts, namespace, name), undefined, current);
      if (admitted !== undefined) await admitted;
      const deletion = this.def.strategy.deletion;
      const marked = current.metadata.deletionTimestamp !== undefined;
      // Foreground and Orphan leave the object to the garbage collector, under its finalizer, as upstream's.
      const collect = deletion ? undefined : GC_FINALIZERS[opts.propagationPolicy ?? ""];
      try {
        // A kind deleted in two steps: the first delete marks it, later ones find it as it is until `pending` ends.
        if (deletion && !marked) return await this.markDeleted(stored, opts, (next) => deletion.mark(next));
        if (deletion?.pending(current)) return { object: current, deleted: false };
        if (collect && !marked) return await this.markDeleted(stored, opts, (next) => void (next.metadata.finalizers = [...(next.metadata.finalizers ?? []).filter((f) => f !== collect), collect]));
        if (current.metadata.finalizers?.length) return marked ? { object: current, deleted: false } : await this.markDeleted(stored, opts);
        if (!opts.dryRun) await this.ctx.storage.delete(stored.key, stored.revision);
        return { object: current, deleted: true };
      } catch (err) {
        if (isPlatformError(err, "NOT_FOUND")) throw notFound(this.def, name);
        if (!isPlatformError(err, "CONFLICT") || pre !== undefined || attempt >= UPDATE_ATTEMPTS) throw isPlatformError(err, "CONFLICT") ? conflict(this.def, name) : err;
      }
    }
  }

  /** Sets the deletionTimestamp (and what `mark` sets) of an object something still holds, and stores it. */
  private async markDeleted(stored: StoredObject, opts: DeleteOptions, mark?: (next: ApiObject) => void): Promise<DeleteResult> {
    const next = copyPlain(stored.object);
    next.metadata.deletionTimestamp = rfc3339(new Date(this.ctx.clock.now()));
    next.metadata.deletionGracePeriodSeconds = 0;
    mark?.(next);
    if (opts.dryRun) return { object: next, deleted: false };
    const kv = await this.ctx.storage.update(stored.key, serializeForStorage(next), stored.revision, this.ttlSeconds);
    next.metadata.resourceVersion = String(kv.modRevision);
    if (mark) this.ctx.deletionMarked?.(this.def, next.metadata.name!);
    return { object: next, deleted: false };
  }

  /** A namespaced create needs its namespace, and one being deleted takes no new content (upstream's NamespaceLifecycle). */
  private async checkNamespace(namespace: string, name: string): Promise<void> {
    const state = await this.ctx.namespace(namespace);
    if (!state) throw new PlatformError("NOT_FOUND", `namespaces "${namespace}" not found`, { details: { name: namespace, kind: "namespaces" } });
    if (state === "active") return;
    throw forbidden(this.def, name, `unable to create new content in namespace ${namespace} because it is being terminated`, [
      { reason: "NamespaceTerminating", message: `namespace ${namespace} is being terminated`, field: "metadata.namespace" },
    ]);
  }

  /** The Status a delete answers with when the kind does not return the object. */
  deletedStatus(result: DeleteResult): Status {
    return {
      apiVersion: "v1",
      kind: "Status",
      metadata: {},
      status: "Success",
      details: { name: result.object.metadata.name, group: this.def.group, kind: this.def.plural, uid: result.object.metadata.uid },
      code: 200,
    };
  }

  /**
   * The endpoint's body check (write-request.ts) of a create's or update's body, or of what a patch made, without the
   * empty metadata upstream omits.
   */
  checkBody(body: unknown, namespace: string | undefined, name: string | undefined): ApiObject {
    const obj = checkBody(this.def, this.apiVersion, body, namespace, name);
    dropEmptyMetadata(obj);
    return obj;
  }

  /** validateMetadata, and a name the storage key can hold (a rule of this server, beyond the kind's name rule). */
  private metadataProblems(namespace: string | undefined, meta: ApiObject["metadata"]): FieldError[] {
    const errors = validateMetadata(this.def, meta);
    const name = meta.name;
    if (name && !errors.some((e) => e.field === "metadata.name") && !isStorableKey(this.key(namespace, name))) {
      errors.unshift({ field: "metadata.name", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(name)}: ${keyRoomProblem(this.key(namespace, ""))}` });
    }
    return errors;
  }

  private subresourceStrategy(name: string | undefined): SubresourceStrategy | undefined {
    if (name === undefined) return undefined;
    const sub = this.def.strategy.subresources?.[name];
    if (!sub) throw new PlatformError("NOT_FOUND", `${this.def.plural}/${name} is not served`);
    return sub;
  }

  private strategyContext(now: Date, opts: WriteOptions): StrategyContext {
    return { now, names: this.ctx.names, user: opts.user, subresource: opts.subresource };
  }

  private writer(now: Date, opts: WriteOptions): Writer {
    return { manager: opts.fieldManager || DEFAULT_MANAGER, time: rfc3339(now), subresource: opts.subresource };
  }

  private validate(obj: ApiObject, errors: readonly FieldError[]): void {
    if (errors.length > 0) throw invalid(this.def, obj.metadata.name ?? "", errors);
  }

  /**
   * Runs a strategy step. A strategy that trips over a malformed body (a TypeError on an unexpected JSON type) must
   * still answer 4xx, not 500: the body is what is wrong. Logged so the strategy can be tightened.
   */
  private guard<T>(step: () => T): T {
    try {
      return step();
    } catch (err) {
      if (err instanceof PlatformError) throw err;
      this.ctx.logger.warn({ err, resource: this.def.plural }, "strategy failed on a malformed object");
      throw badRequest(`the object could not be processed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

/**
 * No-op writes are not stored (upstream skips them too). A write that changes no field leaves managedFields as they
 * were (entry times included), so only a change of ownership (an apply sharing fields) is stored without one.
 */
function unchanged(next: ApiObject, previous: ApiObject): boolean {
  const strip = (o: ApiObject) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
  return isDeepStrictEqual(strip(next), strip(previous));
}

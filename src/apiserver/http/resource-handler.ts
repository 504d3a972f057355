// Resource requests: get/list/watch/create/update/patch/delete(collection) on the registry, once the verb is known (resource-verb.ts).
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { SchemaRegistry } from "../../api/schema.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { isStackOverflow, NESTING_MESSAGE } from "../../plain-data.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import { applyPatch, checkPatchShape, patchTypeOf } from "../patch/index.js";
import { authenticationWarnings, type Pipeline } from "../pipeline.js";
import type { ResourceStore } from "../registry/generic.js";
import type { Registry } from "../registry/registry.js";
import { listCollection, type CachedCollection, type ListQuery } from "../registry/list.js";
import type { ResourceDefinition, Verb } from "../registry/strategy.js";
import { selectorTextHint, matchesFields, matchesLabels, metadataField, parseFieldSelector, parseLabelSelector, type ObjectFilter } from "../selectors.js";
import { TableConverter } from "../table.js";
import type { WatchSource } from "../registry/watch.js";
import { decodeBody, decodeJson, decodeYaml, mediaType, negotiate } from "./content.js";
import { checkFields } from "./field-validation.js";
import { deleteOptions } from "./delete-options.js";
import { isPretty, listParams, writeParams, type ListParams, type RawQuery, type WriteParams } from "./query.js";
import { send, sendRawList, sendWritten, type ResponseSettings } from "./respond.js";
import type { ResourceTarget } from "./resource-verb.js";
import { actionBody, annotator, decodeChecked, writeOptions } from "./resource-write.js";
import { streamWatch } from "./watch-stream.js";

/** What a request's selectors select: a filter over decoded objects, and one name held to by its key. */
type Selection = Pick<ListQuery, "filter" | "name" | "single">;

export interface ResourceHandlerDeps {
  readonly registry: Registry;
  readonly schemas: SchemaRegistry;
  readonly pipeline: Pipeline;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The watch cache of a resource, when one serves it (resourceVersion=0 lists and watches). */
  readonly cache: (store: ResourceStore) => (CachedCollection & WatchSource) | undefined;
  /**
   * --min-request-timeout: a watch without timeoutSeconds lasts a random time in [this, 2 × this) seconds, as
   * upstream, so watches started together do not all end together; 0 keeps it open until the client leaves.
   */
  readonly minRequestTimeoutSeconds: number;
}

const PATCH_TYPES = new Set(["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"]);
const APPLY_PATCH = "application/apply-patch+yaml";

export class ResourceHandler {
  readonly #tables = new Map<ResourceDefinition, TableConverter>();

  constructor(private readonly deps: ResourceHandlerDeps) {}

  async handle(req: FastifyRequest, reply: FastifyReply, t: ResourceTarget, verb: Verb | "action", user: UserInfo): Promise<unknown> {
    const q = req.query as RawQuery;
    const store = this.deps.registry.store(t.def);
    const tableAllowed = verb === "get" || verb === "list" || verb === "watch";
    const out: ResponseSettings = { negotiated: negotiate(req.headers.accept, tableAllowed), pretty: isPretty(q), warnings: authenticationWarnings(user) };
    const ns = t.namespace;
    switch (verb) {
      case "get": {
        const stored = await store.get(ns, t.name!);
        if (out.negotiated.table) return this.sendObject(reply, out, 200, stored.object, t.def, q);
        // As a LIST page: compact JSON is the stored text with resourceVersion spliced in (no parse, no stringify);
        // the object is decoded only for YAML or pretty output.
        return sendWritten(reply, { code: 200, get object() { return stored.object; }, json: stored.json() }, out);
      }
      case "list":
        return this.list(reply, out, store, ns, q);
      case "watch":
        return this.watch(req, reply, out, store, ns, q);
      case "create":
      case "action":
        return this.create(req, reply, out, store, t, user, verb === "action");
      case "update": {
        const w = writeParams(q);
        const body = decodeChecked(req, this.deps.schemas, t.def, w, out);
        // The body was decoded for this request alone: the registry may store it without a copy.
        const r = await store.update(ns, t.name!, body, { ...writeOptions(req, out, w, user, t.subresource), ownBody: true });
        return sendWritten(reply, r, out);
      }
      case "patch":
        return this.patch(req, reply, out, store, t, user);
      case "delete":
        return this.delete(req, reply, out, store, t, user);
      case "deletecollection":
        return this.deleteCollection(req, reply, out, store, ns, user);
    }
  }

  private table(def: ResourceDefinition): TableConverter {
    let t = this.#tables.get(def);
    if (!t) this.#tables.set(def, (t = new TableConverter(def)));
    return t;
  }

  private sendObject(reply: FastifyReply, out: ResponseSettings, code: number, obj: ApiObject, def: ResourceDefinition, q: RawQuery): FastifyReply {
    if (!out.negotiated.table) return send(reply, code, obj, out);
    const now = new Date(this.deps.clock.now());
    const table = this.table(def).table([obj], now, listParams(q).includeObject, out.negotiated.table, { resourceVersion: obj.metadata.resourceVersion });
    return send(reply, code, table, out);
  }

  /**
   * What the selectors select in the collection of `ns`, as every list, watch and collection delete takes it whole: a
   * filter, and the one name they require when a field selector names it (`metadata.name=x`, held to by the key) —
   * a name without the rest would select everything.
   */
  private selection(def: ResourceDefinition, p: ListParams, ns: string | undefined): Selection {
    const labels = parseLabelSelector(p.labelSelector);
    const extra = def.fieldSelectors ?? {};
    const fields = parseFieldSelector(p.fieldSelector, ["metadata.name", "metadata.namespace", ...Object.keys(extra)]);
    if (labels.length === 0 && fields.length === 0) return {};
    const name = fields.find((f) => f.field === "metadata.name" && f.operator === "=")?.value;
    const named = name === undefined ? {} : { name, single: !def.namespaced || ns !== undefined };
    // The name alone (a node agent waiting for its CSR): every list and watch path holds to it by the key, so no
    // object is decoded to be selected.
    if (name !== undefined && labels.length === 0 && fields.length === 1) return named;
    const matches = (obj: ApiObject) =>
      matchesLabels(labels, obj.metadata?.labels) && matchesFields(fields, (f) => (Object.hasOwn(extra, f) ? extra[f]!(obj) : metadataField(obj, f)));
    // Objects whose text lacks a required value are passed over undecoded (a selective list of a large collection).
    const mayMatch = selectorTextHint(labels, fields);
    const filter: ObjectFilter = mayMatch ? Object.assign(matches, { mayMatch }) : matches;
    return { filter, ...named };
  }

  private async list(reply: FastifyReply, out: ResponseSettings, store: ResourceStore, ns: string | undefined, q: RawQuery): Promise<unknown> {
    const p = listParams(q);
    const page = await withTimeout(
      listCollection(this.deps.registry.storage, this.deps.cache(store), store.prefix(ns), { ...p, ...this.selection(store.def, p, ns) }),
      p.timeoutSeconds,
      this.deps.clock,
    );
    const metadata = {
      resourceVersion: String(page.revision),
      ...(page.continue ? { continue: page.continue } : {}),
      ...(page.remainingItemCount !== undefined ? { remainingItemCount: page.remainingItemCount } : {}),
    };
    if (out.negotiated.table) {
      const now = new Date(this.deps.clock.now());
      return send(reply, 200, this.table(store.def).table(page.items.map((i) => i.object), now, p.includeObject, out.negotiated.table, metadata), out);
    }
    const head = { kind: store.def.listKind, apiVersion: store.apiVersion, metadata };
    if (out.negotiated.format === "json" && !out.pretty) return sendRawList(reply, head, page.items);
    return send(reply, 200, { ...head, items: page.items.map((i) => i.object) }, out);
  }

  private async watch(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, ns: string | undefined, q: RawQuery): Promise<unknown> {
    const p = listParams(q);
    const { filter, name } = this.selection(store.def, p, ns);
    const source = this.deps.cache(store);
    if (!source) throw new PlatformError("METHOD_NOT_ALLOWED", `watch is not served for ${store.def.plural}`);
    const table = out.negotiated.table ? this.table(store.def) : undefined;
    const version = out.negotiated.table;
    const include = p.includeObject;
    const convert = table && version
      ? (obj: ApiObject) => table.table([obj], new Date(this.deps.clock.now()), include, version, { resourceVersion: obj.metadata.resourceVersion })
      : undefined;
    return streamWatch(req, reply, {
      source,
      prefix: store.prefix(ns),
      params: p,
      filter,
      ...(name !== undefined && { name }),
      convert,
      clock: this.deps.clock,
      timeoutSeconds: p.timeoutSeconds ?? this.deps.minRequestTimeoutSeconds * (1 + Math.random()),
      logger: this.deps.logger,
    });
  }

  private async create(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, t: ResourceTarget, user: UserInfo, action: boolean): Promise<unknown> {
    const w = writeParams(req.query as RawQuery);
    if (action || store.def.createOnly) {
      const resource = action ? `${store.def.plural}/${t.subresource}` : store.def.plural;
      const handler = this.deps.registry.createHandler(store.def.group, resource);
      const body = decodeBody(req.body as Buffer | undefined, req.headers["content-type"]);
      const obj = action ? actionBody(body, t.subresource!, this.deps.registry.names) : store.checkBody(body, t.namespace, undefined);
      const now = new Date(this.deps.clock.now());
      const result = await handler(obj, { now, names: this.deps.registry.names, user, subresource: t.subresource, namespace: t.namespace, name: t.name });
      return send(reply, 201, result, out);
    }
    const body = decodeChecked(req, this.deps.schemas, store.def, w, out);
    const r = await store.create(t.namespace, body, writeOptions(req, out, w, user, undefined));
    return sendWritten(reply, r, out);
  }

  private async patch(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, t: ResourceTarget, user: UserInfo): Promise<unknown> {
    const w = writeParams(req.query as RawQuery);
    const type = mediaType(req.headers["content-type"]);
    if (type === APPLY_PATCH) return this.apply(req, reply, out, store, t, user, w);
    if (!PATCH_TYPES.has(type)) {
      throw new PlatformError("UNSUPPORTED_MEDIA_TYPE", `the patch media type ${JSON.stringify(type)} is not supported; use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json`);
    }
    const text = (req.body as Buffer | undefined)?.toString("utf8") ?? "";
    if (text.trim() === "") throw new PlatformError("BAD_REQUEST", "the patch body is empty");
    // Decoded once, here: the decoded value (an object or an array once its shape is checked) goes to applyPatch,
    // which would decode a string again.
    const patchBody = decodeJson(text);
    checkPatchShape(patchTypeOf(type), patchBody);
    const schema = this.deps.schemas.lookup(store.def.group, store.def.kind);
    const r = await store.patch(
      t.namespace,
      t.name!,
      (current) => {
        const next = patched(() => applyPatch(type, current, patchBody, { schema, source: text }) as ApiObject);
        out.warnings.splice(0, out.warnings.length, ...checkFields(next, schema, w.fieldValidation, { text }));
        return next;
      },
      writeOptions(req, out, w, user, t.subresource),
    );
    return sendWritten(reply, r, out);
  }

  /** Server-side apply: a YAML (or JSON) object merged under field ownership; `fieldManager` is required. */
  private async apply(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, t: ResourceTarget, user: UserInfo, w: WriteParams): Promise<unknown> {
    if (w.fieldManager === undefined) {
      throw new PlatformError("INVALID", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
        causes: [{ reason: "FieldValueRequired", message: "Required value: is required for apply patch", field: "fieldManager" }],
        details: { group: "meta.k8s.io", kind: "PatchOptions" },
      });
    }
    const text = (req.body as Buffer | undefined)?.toString("utf8") ?? "";
    if (text.trim() === "") throw new PlatformError("BAD_REQUEST", "the patch body is empty");
    const config = decodeYaml(text, w.fieldValidation === "Strict");
    const schema = this.deps.schemas.lookup(store.def.group, store.def.kind);
    out.warnings.push(...checkFields(config, schema, w.fieldValidation));
    const r = await store.apply(t.namespace, t.name!, config, { dryRun: w.dryRun, fieldManager: w.fieldManager, force: w.force, user, subresource: t.subresource, ...annotator(req, out) });
    return sendWritten(reply, r, out);
  }

  private async delete(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, t: ResourceTarget, user: UserInfo): Promise<unknown> {
    const opts = this.deleteOptions(req, out, user);
    const r = await store.delete(t.namespace, t.name!, opts);
    if (!r.deleted || store.def.deleteReturnsObject) return send(reply, 200, r.object, out);
    return send(reply, 200, store.deletedStatus(r), out);
  }

  private async deleteCollection(req: FastifyRequest, reply: FastifyReply, out: ResponseSettings, store: ResourceStore, ns: string | undefined, user: UserInfo): Promise<unknown> {
    const q = req.query as RawQuery;
    const p = listParams(q);
    const opts = this.deleteOptions(req, out, user);
    const page = await listCollection(this.deps.registry.storage, undefined, store.prefix(ns), { ...p, ...this.selection(store.def, p, ns) });
    for (const item of page.items) {
      try {
        await store.delete(item.object.metadata.namespace, item.object.metadata.name!, opts);
      } catch (err) {
        // Deleted concurrently: the collection delete still succeeded for it.
        if (!isPlatformError(err, "NOT_FOUND")) throw err;
      }
    }
    return send(reply, 200, { apiVersion: "v1", kind: "Status", metadata: {}, status: "Success", details: { group: store.def.group, kind: store.def.plural }, code: 200 }, out);
  }

  private deleteOptions(req: FastifyRequest, out: ResponseSettings, user: UserInfo) {
    return { ...deleteOptions(req.query as RawQuery, req.body as Buffer | undefined, req.headers["content-type"], user), ...annotator(req, out) };
  }
}

/**
 * Applies a patch. Copy operations can double an object's nesting per operation, past what the patch engine's
 * recursion survives: running out of stack there is the nesting bound's 400, like a too-deep body.
 */
function patched(apply: () => ApiObject): ApiObject {
  try {
    return apply();
  } catch (err) {
    if (isStackOverflow(err)) throw new PlatformError("BAD_REQUEST", `the patched object is refused: ${NESTING_MESSAGE}`);
    throw err;
  }
}

/** Bounds a list by `timeoutSeconds` (504 Timeout when it takes longer). */
async function withTimeout<T>(work: Promise<T>, timeoutSeconds: number | undefined, clock: Clock): Promise<T> {
  if (!timeoutSeconds) return work;
  let cancel: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    cancel = clock.setTimer(timeoutSeconds * 1000, () => reject(new PlatformError("TIMEOUT", `the list did not finish within timeoutSeconds=${timeoutSeconds}`)));
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    cancel?.();
  }
}

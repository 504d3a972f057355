// Resource requests: verb from method and path, then get/list/watch/create/update/patch/delete(collection) on the registry.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { SchemaRegistry } from "../../api/schema.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { isStackOverflow, NESTING_MESSAGE } from "../../plain-data.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import { applyPatch, checkPatchShape, patchTypeOf } from "../patch/index.js";
import type { Pipeline } from "../pipeline.js";
import type { ResourceStore } from "../registry/generic.js";
import type { Registry } from "../registry/registry.js";
import { listCollection, type CachedCollection } from "../registry/list.js";
import type { ResourceDefinition, Verb } from "../registry/strategy.js";
import { matchesFields, matchesLabels, metadataField, parseFieldSelector, parseLabelSelector } from "../selectors.js";
import { TableConverter } from "../table.js";
import { ACTION_KINDS } from "../discovery.js";
import { fillTypeMeta } from "../registry/type-meta.js";
import type { WatchSource } from "../registry/watch.js";
import { decodeBody, decodeJson, decodeYaml, isJsonType, isYamlType, mediaType, negotiate } from "./content.js";
import { checkFields } from "./field-validation.js";
import { deleteOptions } from "./delete-options.js";
import { isPretty, listParams, writeParams, type RawQuery, type WriteParams } from "./query.js";
import { send, sendRawList, sendWritten, type ResponseSettings } from "./respond.js";
import type { Target } from "./routes.js";
import { streamWatch } from "./watch-stream.js";
import type { Deadline } from "../webhook/deadline.js";

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

type ResourceTarget = Extract<Target, { type: "resource" }>;

const PATCH_TYPES = new Set(["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"]);
const APPLY_PATCH = "application/apply-patch+yaml";

const methodNotAllowed = (method: string, what: string) =>
  new PlatformError("METHOD_NOT_ALLOWED", `the server does not allow this method on the requested resource: ${method} ${what}`);

/** The request's verb, as authorization sees it; 405 when the path does not take this method. */
export function verbOf(method: string, t: ResourceTarget, watch: boolean): Verb | "action" {
  const def = t.def;
  const what = `${def.plural}${t.subresource ? `/${t.subresource}` : ""}`;
  let verb: Verb | "action" | undefined;
  if (t.subresource !== undefined) {
    if (def.actions?.includes(t.subresource)) verb = method === "POST" ? "action" : undefined;
    else {
      const sub = def.strategy.subresources?.[t.subresource];
      if (!sub) throw new PlatformError("NOT_FOUND", `the server could not find the requested resource (${what})`);
      const v = ({ GET: "get", PUT: "update", PATCH: "patch" } as const)[method as "GET"];
      verb = v && sub.verbs.includes(v) ? v : undefined;
    }
  } else if (t.name !== undefined) {
    verb = ({ GET: "get", PUT: "update", PATCH: "patch", DELETE: "delete" } as const)[method as "GET"];
  } else {
    verb = ({ GET: watch ? "watch" : "list", POST: "create", DELETE: "deletecollection" } as const)[method as "GET"];
  }
  if (verb === undefined) throw methodNotAllowed(method, what);
  const served: readonly string[] = def.createOnly ? ["create"] : def.verbs;
  if (verb !== "action" && t.subresource === undefined && !served.includes(verb)) {
    throw methodNotAllowed(method, what);
  }
  return verb;
}

export class ResourceHandler {
  readonly #tables = new Map<ResourceDefinition, TableConverter>();

  constructor(private readonly deps: ResourceHandlerDeps) {}

  async handle(req: FastifyRequest, reply: FastifyReply, t: ResourceTarget, verb: Verb | "action", user: UserInfo): Promise<unknown> {
    const q = req.query as RawQuery;
    const store = this.deps.registry.store(t.def);
    const tableAllowed = verb === "get" || verb === "list" || verb === "watch";
    const out: ResponseSettings = { negotiated: negotiate(req.headers.accept, tableAllowed), pretty: isPretty(q), warnings: [] };
    const ns = t.namespace;
    switch (verb) {
      case "get":
        return this.sendObject(reply, out, 200, (await store.get(ns, t.name!)).object, t.def, q);
      case "list":
        return this.list(reply, out, store, ns, q);
      case "watch":
        return this.watch(req, reply, out, store, ns, q);
      case "create":
      case "action":
        return this.create(req, reply, out, store, t, user, verb === "action");
      case "update": {
        const w = writeParams(q);
        const body = this.decodeChecked(req, t.def, w, out);
        // The body was decoded for this request alone: the registry may store it without a copy.
        const r = await store.update(ns, t.name!, body, { ...this.writeOptions(req, out, w, user, t.subresource), ownBody: true });
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

  private filter(def: ResourceDefinition, labelSelector: string, fieldSelector: string): ((obj: ApiObject) => boolean) | undefined {
    const labels = parseLabelSelector(labelSelector);
    const extra = def.fieldSelectors ?? {};
    const fields = parseFieldSelector(fieldSelector, ["metadata.name", "metadata.namespace", ...Object.keys(extra)]);
    if (labels.length === 0 && fields.length === 0) return undefined;
    return (obj) =>
      matchesLabels(labels, obj.metadata?.labels) &&
      matchesFields(fields, (f) => (Object.hasOwn(extra, f) ? extra[f]!(obj) : metadataField(obj, f)));
  }

  private async list(reply: FastifyReply, out: ResponseSettings, store: ResourceStore, ns: string | undefined, q: RawQuery): Promise<unknown> {
    const p = listParams(q);
    const filter = this.filter(store.def, p.labelSelector, p.fieldSelector);
    const page = await withTimeout(
      listCollection(this.deps.registry.storage, this.deps.cache(store), store.prefix(ns), { ...p, filter }),
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
    const filter = this.filter(store.def, p.labelSelector, p.fieldSelector);
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
      const obj = action ? this.actionBody(body, t.subresource!) : store.checkBody(body, t.namespace, undefined);
      const now = new Date(this.deps.clock.now());
      const result = await handler(obj, { now, names: this.deps.registry.names, user, subresource: t.subresource, namespace: t.namespace, name: t.name });
      return send(reply, 201, result, out);
    }
    const body = this.decodeChecked(req, store.def, w, out);
    const r = await store.create(t.namespace, body, this.writeOptions(req, out, w, user, undefined));
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
      this.writeOptions(req, out, w, user, t.subresource),
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
    const filter = this.filter(store.def, p.labelSelector, p.fieldSelector);
    const page = await listCollection(this.deps.registry.storage, undefined, store.prefix(ns), { ...p, filter });
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

  /** An action's body: an object whose apiVersion and kind, filled when missing, are the action's (as for any create). */
  private actionBody(body: unknown, action: string): ApiObject {
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw new PlatformError("BAD_REQUEST", "the request body must be a JSON or YAML object");
    const kind = ACTION_KINDS[action]?.(this.deps.registry.names);
    if (kind) fillTypeMeta(body as Record<string, unknown>, { apiVersion: `${kind.group ? `${kind.group}/` : ""}${kind.version}`, kind: kind.kind });
    return body as ApiObject;
  }

  /** Decodes a create/update body and applies fieldValidation; warnings go to the response. */
  private decodeChecked(req: FastifyRequest, def: ResourceDefinition, w: WriteParams, out: ResponseSettings): unknown {
    const type = mediaType(req.headers["content-type"]);
    const raw = req.body as Buffer | undefined;
    const yaml = isYamlType(type);
    const body = yaml && w.fieldValidation === "Strict" ? decodeYaml(raw?.toString("utf8") ?? "", true) : decodeBody(raw, req.headers["content-type"]);
    const schema = this.deps.schemas.lookup(def.group, def.kind);
    // A JSON body is the parse of its text, untouched yet: its key count can stand for the duplicate scan.
    const json = isJsonType(type) && raw ? { text: raw.toString("utf8"), decoded: body } : undefined;
    out.warnings.push(...checkFields(body, schema, w.fieldValidation, json));
    return body;
  }

  private writeOptions(req: FastifyRequest, out: ResponseSettings, w: WriteParams, user: UserInfo, subresource: string | undefined) {
    return { dryRun: w.dryRun, fieldManager: w.fieldManager ?? defaultManager(req.headers["user-agent"]), user, subresource, ...annotator(req, out) };
  }

  private deleteOptions(req: FastifyRequest, out: ResponseSettings, user: UserInfo) {
    return { ...deleteOptions(req.query as RawQuery, req.body as Buffer | undefined, req.headers["content-type"], user), ...annotator(req, out) };
  }
}

/** How admission annotates the request's audit event, when it is audited, adds warnings to the response, and knows the request's deadline. */
function annotator(req: FastifyRequest, out: ResponseSettings): { annotate?: (key: string, value: string) => void; warn: (text: string) => void; deadline?: Deadline } {
  const audit = req.platformAudit;
  const warn = (text: string): void => void (out.warnings.includes(text) || out.warnings.push(text));
  const deadline = req.platformDeadline ?? undefined;
  return { ...(audit && { annotate: (key: string, value: string) => audit.annotate(key, value) }), warn, ...(deadline && { deadline }) };
}

/** Upstream's default field manager: the User-Agent up to its first '/' (`kubectl` from `kubectl/v1.32.4 ...`). */
function defaultManager(userAgent: string | undefined): string | undefined {
  const name = userAgent?.split("/")[0]?.trim().slice(0, 128);
  return name ? name.replace(/[^\x20-\x7e]/g, "") || undefined : undefined;
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

// Typed access to one resource over the REST client: the seed's paths, query parameters and patch content types.
import type { ApiList, ApiObject } from "../api/meta.js";
import { PlatformError } from "../errors.js";
import type { Query, RestClient } from "./rest-client.js";
import type { ListParams, ResourceClient, WatchEvent, WatchParams, WriteParams } from "./types.js";
import { watchEvents } from "./watch.js";
import { PATCH_CONTENT_TYPES } from "../api/meta.js";

export interface ResourceRef {
  /** API group ("" for the core group served under /api). */
  readonly group: string;
  readonly version: string;
  /** Lower-case plural as in the path (`certificatesigningrequests`). */
  readonly plural: string;
  readonly namespaced: boolean;
}

const SEGMENT_RE = /^[^/]+$/;

function segment(value: string | undefined, what: string): string {
  if (typeof value !== "string" || !SEGMENT_RE.test(value) || value === "." || value === "..") {
    throw new PlatformError("INVALID_ARGUMENT", `expected a ${what} (non-empty, without "/"), got ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

function writeQuery(p: WriteParams | undefined): Query {
  return { dryRun: p?.dryRun ? "All" : undefined, fieldManager: p?.fieldManager };
}

export class ResourceClientImpl<T extends ApiObject = ApiObject> implements ResourceClient<T> {
  readonly #client: RestClient;
  readonly #ref: ResourceRef;
  readonly #base: string;

  constructor(client: RestClient, ref: ResourceRef) {
    this.#client = client;
    this.#ref = ref;
    segment(ref.plural, "resource plural");
    segment(ref.version, "API version");
    this.#base = ref.group === "" || ref.group === "core" ? `/api/${ref.version}` : `/apis/${segment(ref.group, "API group")}/${ref.version}`;
  }

  /** Collection path; a namespaced resource without a namespace lists across all namespaces. */
  collectionPath(namespace?: string): string {
    const ns = this.#ref.namespaced && namespace ? `/namespaces/${segment(namespace, "namespace")}` : "";
    return `${this.#base}${ns}/${this.#ref.plural}`;
  }

  itemPath(name: string, namespace?: string, subresource?: string): string {
    const ns = this.#ref.namespaced ? (namespace ?? this.#client.config.namespace) : undefined;
    const sub = subresource ? `/${segment(subresource, "subresource")}` : "";
    return `${this.collectionPath(ns)}/${segment(name, "name")}${sub}`;
  }

  list(params: ListParams = {}): Promise<ApiList<T>> {
    return this.#client.request<ApiList<T>>("GET", this.collectionPath(params.namespace), undefined, {
      signal: params.signal,
      query: {
        labelSelector: params.labelSelector,
        fieldSelector: params.fieldSelector,
        limit: params.limit,
        continue: params.continue,
        resourceVersion: params.resourceVersion,
        resourceVersionMatch: params.resourceVersionMatch,
      },
    });
  }

  watch(params: WatchParams): AsyncIterable<WatchEvent<T>> {
    const query: Query = {
      watch: true,
      labelSelector: params.labelSelector,
      fieldSelector: params.fieldSelector,
      resourceVersion: params.resourceVersion,
      allowWatchBookmarks: params.allowWatchBookmarks,
      sendInitialEvents: params.sendInitialEvents,
      // The server accepts sendInitialEvents only together with this match rule.
      resourceVersionMatch: params.sendInitialEvents !== undefined ? "NotOlderThan" : undefined,
      timeoutSeconds: params.timeoutSeconds,
    };
    const path = this.collectionPath(params.namespace);
    const ctx = { method: "GET", path };
    return watchEvents<T>(() => this.#client.openStream(path, { query, signal: params.signal }), params.signal, ctx);
  }

  get(name: string, options: { namespace?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.#client.request<T>("GET", this.itemPath(name, options.namespace), undefined, { signal: options.signal });
  }

  create(obj: T, params: WriteParams & { namespace?: string } = {}): Promise<T> {
    const ns = this.#ref.namespaced ? (params.namespace ?? obj.metadata?.namespace ?? this.#client.config.namespace) : undefined;
    return this.#client.request<T>("POST", this.collectionPath(ns), obj, { signal: params.signal, query: writeQuery(params) });
  }

  update(obj: T, params: WriteParams & { subresource?: string } = {}): Promise<T> {
    const meta = obj.metadata ?? {};
    return this.#client.request<T>("PUT", this.itemPath(meta.name!, meta.namespace, params.subresource), obj, {
      signal: params.signal,
      query: writeQuery(params),
      // With a resourceVersion the server applies the write at most once: a repeat answers CONFLICT.
      idempotent: typeof meta.resourceVersion === "string" && meta.resourceVersion !== "",
    });
  }

  patch(name: string, patchType: "json" | "merge" | "strategic", patch: unknown, params: WriteParams & { namespace?: string; subresource?: string } = {}): Promise<T> {
    const contentType = PATCH_CONTENT_TYPES[patchType];
    if (!contentType) throw new PlatformError("INVALID_ARGUMENT", `expected patch type json, merge or strategic, got ${JSON.stringify(patchType)}`);
    return this.#client.request<T>("PATCH", this.itemPath(name, params.namespace, params.subresource), patch, {
      signal: params.signal,
      query: writeQuery(params),
      contentType,
    });
  }

  async delete(name: string, options: { namespace?: string; preconditions?: { uid?: string; resourceVersion?: string }; signal?: AbortSignal } = {}): Promise<void> {
    const body = options.preconditions ? { apiVersion: "v1", kind: "DeleteOptions", preconditions: options.preconditions } : undefined;
    await this.#client.request("DELETE", this.itemPath(name, options.namespace), body, { signal: options.signal });
  }
}

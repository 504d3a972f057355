// The client contract the controller runtime builds on: typed list/watch/get/write over one resource.
import type { ApiList, ApiObject, Status } from "../api/meta.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T extends ApiObject = ApiObject> {
  readonly type: WatchEventType;
  /** The object; a Status for ERROR events. */
  readonly object: T | (Status & { metadata: { resourceVersion?: string } });
}

export interface ListParams {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: "Exact" | "NotOlderThan";
  readonly signal?: AbortSignal;
}

export interface WatchParams {
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly resourceVersion?: string;
  readonly allowWatchBookmarks?: boolean;
  readonly sendInitialEvents?: boolean;
  readonly timeoutSeconds?: number;
  /** Aborting ends the iteration cleanly. */
  readonly signal: AbortSignal;
}

/**
 * What an informer needs. Errors are PlatformError with the code mapped from the Status
 * (GONE for 410, CONFLICT, NOT_FOUND, ...) and `retryable` set for 429/5xx/connection failures.
 */
export interface ListWatcher<T extends ApiObject = ApiObject> {
  list(params?: ListParams): Promise<ApiList<T>>;
  /** Yields events until the server ends the stream, the signal aborts, or an error is thrown. */
  watch(params: WatchParams): AsyncIterable<WatchEvent<T>>;
}

export interface WriteParams {
  readonly dryRun?: boolean;
  readonly fieldManager?: string;
  readonly signal?: AbortSignal;
}

/** Typed access to one resource (optionally namespaced); subresource writes address `/status`, `/approval`, ... */
export interface ResourceClient<T extends ApiObject = ApiObject> extends ListWatcher<T> {
  get(name: string, options?: { namespace?: string; signal?: AbortSignal }): Promise<T>;
  create(obj: T, params?: WriteParams & { namespace?: string }): Promise<T>;
  update(obj: T, params?: WriteParams & { subresource?: string }): Promise<T>;
  patch(
    name: string,
    patchType: "json" | "merge" | "strategic",
    patch: unknown,
    params?: WriteParams & { namespace?: string; subresource?: string },
  ): Promise<T>;
  delete(name: string, options?: { namespace?: string; preconditions?: { uid?: string; resourceVersion?: string }; signal?: AbortSignal }): Promise<void>;
}

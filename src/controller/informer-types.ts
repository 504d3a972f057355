// What an informer is given and gives: its handlers, read access to its cache, its options, keys and transforms.
import type { ApiObject } from "../api/meta.js";
import type { ListWatcher } from "../client/types.js";
import type { Clock } from "../time/clock.js";
import type { Logger } from "../logger.js";
import type { JitteredBackoffOptions } from "../time/backoff.js";

export interface InformerHandlers<T extends ApiObject> {
  /** `initial` is true for objects of the first list (and for replays to handlers added later). */
  onAdd?(obj: T, initial: boolean): unknown;
  onUpdate?(oldObj: T, newObj: T): unknown;
  /** The object's last known state (the final state when a watch delivered the deletion). */
  onDelete?(obj: T): unknown;
}

/** Read access to the cache. */
export interface Lister<T extends ApiObject> {
  get(key: string): T | undefined;
  list(): T[];
}

export interface InformerOptions<T extends ApiObject> {
  readonly listWatcher: ListWatcher<T>;
  /** Names the informer in logs (e.g. the resource). */
  readonly name?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly random?: () => number;
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** List page size (default 500). */
  readonly pageSize?: number;
  /** Restart a watch that delivers no event or bookmark for this long (default 5 min). */
  readonly stallTimeoutMs?: number;
  /** Deliver onUpdate(obj, obj) for every cached object periodically; the period is drawn once between v and 2v. 0 = off. */
  readonly minResyncPeriodMs?: number;
  /** Server-side watch timeout asked for, drawn between v and 2v seconds (default 300). */
  readonly watchTimeoutSeconds?: number;
  readonly backoff?: JitteredBackoffOptions;
  /**
   * Applied to every listed or watched object before it is cached or handed to a handler, as client-go's
   * SetTransform: e.g. stripManagedFields, which the controller manager uses for all its informers.
   */
  readonly transform?: (obj: T) => T;
}

/** The cache key: `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(obj: ApiObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name ?? ""}` : (name ?? "");
}

/**
 * Drops metadata.managedFields, which no controller here reads, as kube-controller-manager trims its informers: the
 * cache holds less, and an update sent from a cached copy carries none, which the server reads as "keep the stored
 * ones" (upstream's rule), so field ownership is unchanged.
 */
export function stripManagedFields<T extends ApiObject>(obj: T): T {
  if (obj.metadata?.managedFields === undefined) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

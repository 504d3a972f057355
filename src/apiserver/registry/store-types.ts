// The types around a ResourceStore: what it is built over, the options its writes take and the results they answer.
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { GroupNames } from "../../api/group.js";
import type { Logger } from "../../logger.js";
import type { Storage } from "../storage/types.js";
import type { Clock } from "../../time/clock.js";
import type { Pipeline, RequestHooks } from "../pipeline.js";
import type { ResourceDefinition } from "./strategy.js";

/** What every resource store shares. */
export interface RegistryContext {
  readonly storage: Storage;
  readonly names: GroupNames;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly admit: Pipeline["admit"];
  /** How long objects of the kinds that expire (Events) are kept after their last write, in seconds; 0: for ever. */
  readonly eventTtlSeconds: number;
  /** The state of the namespace a namespaced create goes into (undefined: there is none, and the create is refused). */
  namespace(namespace: string): Promise<"active" | "terminating" | undefined>;
  /** Told when a delete has only marked an object of a kind deleted in two steps (a Namespace, now Terminating). */
  deletionMarked?(def: ResourceDefinition, name: string): void;
}

/** Per-request write settings (query parameters and the requester). */
export interface WriteOptions extends RequestHooks {
  readonly dryRun?: boolean;
  readonly fieldManager?: string;
  readonly user?: UserInfo;
  readonly subresource?: string;
  /**
   * The body was decoded for this call alone (an HTTP request) and may become the stored object as it is: an update
   * with a precondition then skips copying it (it has one attempt). Callers that keep their object leave this unset.
   */
  readonly ownBody?: boolean;
}

export interface ApplyOptions extends WriteOptions {
  /** The applier's name: required for apply, never taken from the User-Agent. */
  readonly fieldManager: string;
  /** Take the conflicting fields from their managers instead of failing with 409. */
  readonly force: boolean;
}

export interface DeleteOptions extends WriteOptions {
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
  readonly propagationPolicy?: string;
  readonly gracePeriodSeconds?: number;
}

export interface WriteResult {
  readonly object: ApiObject;
  /** 201 for a stored create, 200 otherwise. */
  readonly code: 200 | 201;
  /** `object` as compact JSON when this write stored it: the stored bytes with the new resourceVersion spliced in. */
  readonly json?: string;
}

export interface DeleteResult {
  /** The object as it was last (or as it now is, when finalizers keep it). */
  readonly object: ApiObject;
  /** True when the object is gone; false when finalizers keep it with a deletionTimestamp. */
  readonly deleted: boolean;
}

/** A producer of the next object from the current one (an update body or an applied patch). */
export type Mutation = (current: ApiObject) => ApiObject;

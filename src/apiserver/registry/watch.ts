// The API's view of watch: decoded events with resourceVersion set, fed from the watch cache of one resource.
import type { ObjectFilter } from "../selectors.js";
import type { ApiObject, Status } from "../../api/meta.js";

export type ApiWatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface ApiWatchEvent {
  readonly type: ApiWatchEventType;
  /** The object (resourceVersion = the event's revision), a bookmark stub, or an ERROR's Status. */
  readonly object: ApiObject | Status;
  /** The object's JSON text without a parse/stringify round trip, when the source has it. */
  readonly json?: () => string;
}

export interface WatchRequest {
  /** Storage prefix of the watched collection (one namespace or all). */
  readonly prefix: string;
  /** Deliver changes after this revision; 0 = from the current state. */
  readonly fromRevision: number;
  /** Start with ADDED events for the current objects (at ≥ fromRevision). */
  readonly sendInitialEvents: boolean;
  /** Periodic BOOKMARKs, and with sendInitialEvents the one annotated `k8s.io/initial-events-end`. */
  readonly allowBookmarks: boolean;
  /** Selector over decoded objects; objects that leave it arrive as DELETED, objects that enter it as ADDED. */
  readonly filter: ObjectFilter | undefined;
  /** Only the object of this name (an exact `metadata.name` field selector), held to by its key; with `filter` too when set. */
  readonly name?: string;
  /** Aborting ends the iteration. */
  readonly signal: AbortSignal;
}

export interface WatchSource {
  /** Events in revision order; too-old fromRevision yields (or throws) GONE, which the stream turns into a 410 ERROR event. */
  watch(request: WatchRequest): AsyncIterable<ApiWatchEvent>;
}

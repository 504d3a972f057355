// The field schema of every kind the server serves, written with group roles so the group suffix stays one setting.
import * as s from "./nodes.js";
import { REVIEW_KINDS, RBAC_KINDS } from "./access.js";
import { certificateSigningRequest, clusterTrustBundle } from "./certificates.js";
import { CORE_KINDS } from "./core.js";
import { kind, objectReference, type KindSchemaDefinition } from "./shared.js";

export const KIND_SCHEMAS: readonly KindSchemaDefinition[] = [
  ...CORE_KINDS,
  ...REVIEW_KINDS,
  certificateSigningRequest,
  clusterTrustBundle,
  ...RBAC_KINDS,
  kind(
    "apps",
    "ControllerRevision",
    { revision: s.int64("Revision of the state held in data."), data: s.any("Serialized state, stored as raw JSON.") },
    { required: ["revision"] },
  ),
  kind(
    "events",
    "Event",
    {
      eventTime: s.time("Time the event was first observed."),
      series: s.object(
        { count: s.int32("Occurrences of the series up to the last heartbeat."), lastObservedTime: s.time("Time of the last occurrence.") },
        { required: ["count", "lastObservedTime"], description: "Data of an event series; absent for a single event." },
      ),
      action: s.string("Machine-readable action taken or failed; at most 128 characters."),
      reason: s.string("Why the action was taken; at most 128 characters."),
      note: s.string("Human-readable description of the action status; at most 1 kB."),
      type: s.string("Normal or Warning."),
      regarding: s.describe(objectReference, "The object the event is about."),
      related: s.describe(objectReference, "An optional secondary object."),
      reportingController: s.string("Name of the controller that emitted the event."),
      reportingInstance: s.string("ID of the controller instance; at most 128 characters."),
      deprecatedCount: s.int32("Deprecated; for compatibility with core events."),
      deprecatedFirstTimestamp: s.time("Deprecated; for compatibility with core events."),
      deprecatedLastTimestamp: s.time("Deprecated; for compatibility with core events."),
      deprecatedSource: s.object({ component: s.string(), host: s.string() }, { description: "Deprecated; for compatibility with core events." }),
    },
    { required: ["eventTime"] },
  ),
  kind("coordination", "Lease", {
    spec: s.object({
      holderIdentity: s.string("Identity of the holder of the lease."),
      leaseDurationSeconds: s.int32("Seconds candidates wait before they may take the lease."),
      acquireTime: s.time("When the current holder acquired the lease."),
      renewTime: s.time("When the current holder last renewed the lease."),
      leaseTransitions: s.int32("Number of holder changes."),
      strategy: s.string("Coordinated leader election strategy."),
      preferredHolder: s.string("Holder the strategy prefers; needs strategy."),
    }),
  }),
];

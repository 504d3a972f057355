// The field schema of every kind the server serves, written with group roles so the group suffix stays one setting.
import * as s from "./nodes.js";
import { REVIEW_KINDS, RBAC_KINDS } from "./access.js";
import { certificateRevocation, certificateSigningRequest, clusterTrustBundle } from "./certificates.js";
import { CORE_KINDS } from "./core.js";
import { EVENT_KINDS } from "./events.js";
import { selfSubjectRulesReview } from "./rules-review.js";
import { kind, type KindSchemaDefinition } from "./shared.js";

export const KIND_SCHEMAS: readonly KindSchemaDefinition[] = [
  ...CORE_KINDS,
  ...REVIEW_KINDS,
  selfSubjectRulesReview,
  certificateSigningRequest,
  clusterTrustBundle,
  certificateRevocation,
  ...RBAC_KINDS,
  kind(
    "apps",
    "ControllerRevision",
    { revision: s.int64("Revision of the state held in data."), data: s.any("Serialized state, stored as raw JSON.") },
    { required: ["revision"], description: "An immutable snapshot of state a controller keeps to roll back to." },
  ),
  ...EVENT_KINDS,
  kind("coordination", "Lease", {
    spec: s.object({
      holderIdentity: s.string("Identity of the holder of the lease."),
      leaseDurationSeconds: s.int32("Seconds candidates wait before they may take the lease."),
      acquireTime: s.time("When the current holder acquired the lease."),
      renewTime: s.time("When the current holder last renewed the lease."),
      leaseTransitions: s.int32("Number of holder changes."),
      strategy: s.string("Coordinated leader election strategy."),
      preferredHolder: s.string("Holder the strategy prefers; needs strategy."),
    }, { description: "The holder of the lease and its timing." }),
  }, { description: "A lease held by one holder at a time, used for leader election." }),
];

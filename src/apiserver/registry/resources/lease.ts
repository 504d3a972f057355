// Lease (coordination v1, namespaced): the leader-election record; durations positive, transitions non-negative.
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { LEASE_KIND, LEASE_VERSION, type Lease } from "../../../api/types/coordination.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { forbidden, invalid, notSupported, validateQualifiedName } from "../validation.js";
import { buildStrategy, defineResource, specChanged } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, NONE, since } from "./printing.js";

/** Built-in coordinated strategies; others must be qualified `<domain>/<name>` strategies. */
export const LEASE_STRATEGIES = ["OldestEmulationVersion"];

const strategy = buildStrategy({
  schema: kindSchema(LEASE_KIND),
  validate(obj) {
    const spec = (obj as Lease).spec ?? {};
    const errors: FieldError[] = [];
    if (spec.leaseDurationSeconds !== undefined && spec.leaseDurationSeconds <= 0) {
      errors.push(invalid("spec.leaseDurationSeconds", spec.leaseDurationSeconds, "must be greater than 0"));
    }
    if (spec.leaseTransitions !== undefined && spec.leaseTransitions < 0) {
      errors.push(invalid("spec.leaseTransitions", spec.leaseTransitions, "must be greater than or equal to 0"));
    }
    if (spec.strategy !== undefined) {
      if (!spec.strategy.includes("/")) {
        if (!LEASE_STRATEGIES.includes(spec.strategy)) errors.push(notSupported("spec.strategy", spec.strategy, LEASE_STRATEGIES));
      } else errors.push(...validateQualifiedName("spec.strategy", spec.strategy));
    }
    if (spec.preferredHolder && !spec.strategy) errors.push(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"));
    return errors;
  },
  specChanged,
});

export function leaseDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.coordination,
    version: LEASE_VERSION,
    kind: LEASE_KIND,
    plural: "leases",
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: [nameColumn, column("Holder", "The current holder of the lease."), ageColumn],
    row: (obj, now) => [obj.metadata.name, (obj as Lease).spec?.holderIdentity || NONE, since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

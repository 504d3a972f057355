// ClusterRole (rbac v1, cluster-scoped): policy rules on resources in every namespace and on non-resource URLs.
import type { GroupNames } from "../../../api/group.js";
import { CLUSTER_ROLE_KIND, RBAC_VERSION, type AggregationRule, type PolicyRule } from "../../../api/types/rbac.js";
import { kindSchema } from "../../../api/schema.js";
import type { ResourceDefinition } from "../strategy.js";
import { buildStrategy, defineResource } from "./strategy-kit.js";
import { roleColumns, roleRow, validateAggregationRule, validatePolicyRules } from "./rbac-rules.js";

const strategy = buildStrategy({
  schema: kindSchema(CLUSTER_ROLE_KIND),
  validate: (obj) => [
    ...validatePolicyRules(obj.rules as PolicyRule[] | undefined, false),
    ...validateAggregationRule(obj.aggregationRule as AggregationRule | undefined),
  ],
});

export function clusterRoleDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.rbac,
    version: RBAC_VERSION,
    kind: CLUSTER_ROLE_KIND,
    plural: "clusterroles",
    namespaced: false,
    nameRule: "path-segment",
    columns: roleColumns,
    row: roleRow,
    strategy,
  });
}

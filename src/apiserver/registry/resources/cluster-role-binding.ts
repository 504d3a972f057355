// ClusterRoleBinding (rbac v1, cluster-scoped): grants a ClusterRole cluster-wide; ServiceAccount subjects name their namespace.
import type { GroupNames } from "../../../api/group.js";
import { CLUSTER_ROLE_BINDING_KIND, RBAC_VERSION } from "../../../api/types/rbac.js";
import type { ResourceDefinition } from "../strategy.js";
import { defineResource } from "./strategy-kit.js";
import { bindingColumns, bindingRow } from "./rbac-rules.js";
import { bindingStrategy } from "./role-binding.js";

const strategy = bindingStrategy(CLUSTER_ROLE_BINDING_KIND, ["ClusterRole"], false);

export function clusterRoleBindingDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.rbac,
    version: RBAC_VERSION,
    kind: CLUSTER_ROLE_BINDING_KIND,
    plural: "clusterrolebindings",
    namespaced: false,
    nameRule: "path-segment",
    columns: bindingColumns,
    row: bindingRow,
    strategy,
  });
}

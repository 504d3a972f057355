// RoleBinding (rbac v1, namespaced): grants a Role or ClusterRole to subjects within one namespace; roleRef immutable.
import type { GroupNames } from "../../../api/group.js";
import { RBAC_VERSION, ROLE_BINDING_KIND } from "../../../api/types/rbac.js";
import { kindSchema } from "../../../api/schema.js";
import type { ResourceDefinition, ResourceStrategy } from "../strategy.js";
import { buildStrategy, immutableFields, defineResource } from "./strategy-kit.js";
import { bindingColumns, bindingRow, defaultSubjects, validateRoleRef, validateSubjects } from "./rbac-rules.js";

/** The strategy of both binding kinds: they differ in the role kinds they may name and in scope. */
export function bindingStrategy(kind: string, roleKinds: readonly string[], namespaced: boolean): ResourceStrategy {
  return buildStrategy({
    schema: kindSchema(kind),
    prepareForCreate: (obj, ctx) => defaultSubjects(obj, ctx.names),
    prepareForUpdate: (next, _previous, ctx) => defaultSubjects(next, ctx.names),
    validate: (obj, ctx) => [...validateRoleRef(obj, ctx.names, roleKinds), ...validateSubjects(obj, ctx.names, namespaced)],
    validateUpdate: (next, previous) => immutableFields(next, previous, ["roleRef"]),
  });
}

const strategy = bindingStrategy(ROLE_BINDING_KIND, ["Role", "ClusterRole"], true);

export function roleBindingDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.rbac,
    version: RBAC_VERSION,
    kind: ROLE_BINDING_KIND,
    plural: "rolebindings",
    namespaced: true,
    nameRule: "path-segment",
    columns: bindingColumns,
    row: bindingRow,
    strategy,
  });
}

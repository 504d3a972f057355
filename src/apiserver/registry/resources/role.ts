// Role (rbac v1, namespaced): policy rules on resources within one namespace.
import type { GroupNames } from "../../../api/group.js";
import { RBAC_VERSION, ROLE_KIND, type PolicyRule } from "../../../api/types/rbac.js";
import { kindSchema } from "../../../api/schema.js";
import type { ResourceDefinition } from "../strategy.js";
import { buildStrategy, defineResource } from "./strategy-kit.js";
import { roleColumns, roleRow, validatePolicyRules } from "./rbac-rules.js";

const strategy = buildStrategy({
  schema: kindSchema(ROLE_KIND),
  validate: (obj) => validatePolicyRules(obj.rules as PolicyRule[] | undefined, true),
});

export function roleDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.rbac,
    version: RBAC_VERSION,
    kind: ROLE_KIND,
    plural: "roles",
    namespaced: true,
    nameRule: "path-segment",
    columns: roleColumns,
    row: roleRow,
    strategy,
  });
}

// ControllerRevision (apps/v1, namespaced): a revision number and raw state data that never changes after creation.
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { CONTROLLER_REVISION_KIND, CONTROLLER_REVISION_VERSION } from "../../../api/types/controller-revision.js";
import type { ResourceDefinition } from "../strategy.js";
import { invalid, required } from "../validation.js";
import { buildStrategy, defineResource, immutableFields } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, NONE, since } from "./printing.js";

const strategy = buildStrategy({
  schema: kindSchema(CONTROLLER_REVISION_KIND),
  validate(obj) {
    if (obj.revision === undefined) return [required("revision")];
    return (obj.revision as number) < 0 ? [invalid("revision", obj.revision, "must be greater than or equal to 0")] : [];
  },
  validateUpdate: (next, previous) => immutableFields(next, previous, ["data"]),
});

/** `<kind>.<group>/<name>` of the controlling owner, lower-cased as upstream prints it. */
function controllerOf(obj: ApiObject): string {
  const owner = obj.metadata.ownerReferences?.find((o) => o?.controller === true);
  if (!owner) return NONE;
  const slash = owner.apiVersion.indexOf("/");
  const group = slash < 0 ? "" : owner.apiVersion.slice(0, slash);
  return `${group ? `${owner.kind}.${group}` : owner.kind}/${owner.name}`.toLowerCase();
}

export function controllerRevisionDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.apps,
    version: CONTROLLER_REVISION_VERSION,
    kind: CONTROLLER_REVISION_KIND,
    plural: "controllerrevisions",
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: [nameColumn, column("Controller", "The controlling owner of the revision."), column("Revision", "Revision number of the data.", 0, "integer"), ageColumn],
    row: (obj, now) => [obj.metadata.name, controllerOf(obj), obj.revision, since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

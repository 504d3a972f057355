// Namespace (core v1, cluster-scoped): DNS-label names, finalizers, and a status phase that starts Active.
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CORE_VERSION, NAMESPACE_KIND, type Namespace } from "../../../api/types/core.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { index, notSupported, validateQualifiedName } from "../validation.js";
import { buildStrategy, defineResource, specChanged, statusSubresource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";

export const NAMESPACE_PHASES = ["Active", "Terminating"];

const schema = kindSchema(NAMESPACE_KIND);

function validatePhase(obj: ApiObject): FieldError[] {
  const phase = (obj as Namespace).status?.phase;
  return phase === undefined || NAMESPACE_PHASES.includes(phase) ? [] : [notSupported("status.phase", phase, NAMESPACE_PHASES)];
}

const strategy = buildStrategy({
  schema,
  prepareForCreate(obj) {
    obj.status = { phase: "Active" };
  },
  prepareForUpdate(next, previous) {
    next.status = structuredClone(previous.status ?? { phase: "Active" });
  },
  validate(obj) {
    const finalizers = (obj as Namespace).spec?.finalizers ?? [];
    return [...finalizers.flatMap((f, i) => validateQualifiedName(index("spec.finalizers", i), f)), ...validatePhase(obj)];
  },
  specChanged,
  subresources: { status: statusSubresource({ schema, validateUpdate: validatePhase }) },
});

export function namespaceDefinition(): ResourceDefinition {
  return defineResource({
    group: "",
    version: CORE_VERSION,
    kind: NAMESPACE_KIND,
    plural: "namespaces",
    shortNames: ["ns"],
    namespaced: false,
    nameRule: "dns-label",
    columns: [nameColumn, column("Status", "The phase of the namespace."), ageColumn],
    row: (obj, now) => [obj.metadata.name, (obj as Namespace).status?.phase ?? "", since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

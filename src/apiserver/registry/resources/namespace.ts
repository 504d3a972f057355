// Namespace (core v1, cluster-scoped): DNS-label names, the `kubernetes` finalizer, a phase, and deletion in two steps.
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CORE_VERSION, NAMESPACE_KIND, type Namespace } from "../../../api/types/core.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { forbidden } from "../errors.js";
import { index, invalid, notSupported, validateQualifiedName } from "../validation.js";
import { buildStrategy, defineResource, fieldSubresource, specChanged, STANDARD_VERBS, statusSubresource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";
import { copyPlain } from "../../../plain-data.js";

export const NAMESPACE_PHASES = ["Active", "Terminating"];

/** The finalizer the server puts on every namespace and takes off once the namespace's content is gone (upstream's name). */
export const NAMESPACE_FINALIZER = "kubernetes";

/** Namespaces that may not be deleted (upstream's immortal namespaces; `platform-system` plays kube-system's part). */
const IMMORTAL_NAMESPACES: readonly string[] = ["default", "platform-system", "kube-system", "kube-public"];

const schema = kindSchema(NAMESPACE_KIND);

function validatePhase(obj: ApiObject): FieldError[] {
  const phase = (obj as Namespace).status?.phase;
  return phase === undefined || NAMESPACE_PHASES.includes(phase) ? [] : [notSupported("status.phase", phase, NAMESPACE_PHASES)];
}

/** A status write keeps the phase in step with the deletion, as upstream's namespace status rules. */
function validateStatusPhase(obj: ApiObject): FieldError[] {
  const errors = validatePhase(obj);
  if (errors.length > 0) return errors;
  const phase = (obj as Namespace).status?.phase;
  if (obj.metadata.deletionTimestamp === undefined) return phase === "Terminating" ? [invalid("status.phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")] : [];
  return phase === "Terminating" ? [] : [invalid("status.phase", phase ?? "", "may only be 'Terminating' if `deletionTimestamp` is not empty")];
}

function validateFinalizers(obj: ApiObject): FieldError[] {
  return ((obj as Namespace).spec?.finalizers ?? []).flatMap((f, i) => validateQualifiedName(index("spec.finalizers", i), f));
}

const finalizersOf = (obj: ApiObject): string[] => (obj as Namespace).spec?.finalizers ?? [];

/** `namespaces/finalize`: PUT changes spec.finalizers and nothing else (upstream's finalize subresource). */
const finalize = fieldSubresource("spec", ["update"], {
  schema,
  prepareForUpdate(next) {
    const finalizers = finalizersOf(next);
    (next as Namespace).spec = finalizers.length > 0 ? { finalizers } : {};
  },
  validateUpdate: validateFinalizers,
});

const strategy = buildStrategy({
  schema,
  prepareForCreate(obj) {
    obj.status = { phase: "Active" };
    // As upstream: every namespace starts with the finalizer that holds it until its content is deleted.
    const finalizers = finalizersOf(obj);
    if (!finalizers.includes(NAMESPACE_FINALIZER)) (obj as Namespace).spec = { ...(obj as Namespace).spec, finalizers: [...finalizers, NAMESPACE_FINALIZER] };
  },
  prepareForUpdate(next, previous) {
    // Finalizers change only through /finalize, the phase only through /status or a delete.
    next.status = copyPlain(previous.status ?? { phase: "Active" });
    const kept = (previous as Namespace).spec?.finalizers;
    (next as Namespace).spec = { ...(next as Namespace).spec };
    if (kept === undefined) delete (next as Namespace).spec!.finalizers;
    else (next as Namespace).spec!.finalizers = [...kept];
  },
  validate(obj) {
    return [...validateFinalizers(obj), ...validatePhase(obj)];
  },
  specChanged,
  subresources: { status: statusSubresource({ schema, validateUpdate: validateStatusPhase }), finalize },
  deletion: {
    mark(obj) {
      const name = obj.metadata.name ?? "";
      if (IMMORTAL_NAMESPACES.includes(name)) throw forbidden(namespaceDef, name, "this namespace may not be deleted");
      (obj as Namespace).status = { ...(obj as Namespace).status, phase: "Terminating" };
    },
    pending: (obj) => finalizersOf(obj).length > 0,
  },
});

const namespaceDef: ResourceDefinition = defineResource({
  group: "",
  version: CORE_VERSION,
  kind: NAMESPACE_KIND,
  plural: "namespaces",
  shortNames: ["ns"],
  namespaced: false,
  // As upstream: no deletecollection, each namespace's deletion is a deletion of everything in it.
  verbs: STANDARD_VERBS.filter((v) => v !== "deletecollection"),
  nameRule: "dns-label",
  columns: [nameColumn, column("Status", "The phase of the namespace."), ageColumn],
  row: (obj, now) => [obj.metadata.name, (obj as Namespace).status?.phase ?? "", since(obj.metadata.creationTimestamp, now)],
  strategy,
});

export function namespaceDefinition(): ResourceDefinition {
  return namespaceDef;
}

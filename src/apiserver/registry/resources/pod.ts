// Pod (core v1, namespaced), minimally: named containers with images, unique names; spec fixed but for images; a status subresource.
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CORE_VERSION, POD_KIND, type Container, type Pod } from "../../../api/types/core.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { dns1123LabelProblem, dns1123SubdomainProblem, duplicate, forbidden, index, notSupported, required, validateNameRule } from "../validation.js";
import { buildStrategy, deepEqual, isRecord, defineResource, specChanged, statusSubresource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";
import { copyPlain } from "../../../plain-data.js";

export const POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
export const RESTART_POLICIES = ["Always", "OnFailure", "Never"];

const schema = kindSchema(POD_KIND);

function validateContainers(list: readonly Container[], path: string, seen: Set<string>): FieldError[] {
  return list.flatMap((c, i) => {
    const at = index(path, i);
    const errors: FieldError[] = [];
    if (!c.name) errors.push(required(`${at}.name`));
    else {
      errors.push(...validateNameRule(`${at}.name`, c.name, dns1123LabelProblem));
      if (seen.has(c.name)) errors.push(duplicate(`${at}.name`, c.name));
      seen.add(c.name);
    }
    if (!c.image) errors.push(required(`${at}.image`));
    return errors;
  });
}

function validatePod(obj: ApiObject): FieldError[] {
  const spec = (obj as Pod).spec;
  if (!spec) return [required("spec")];
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  if (!spec.containers?.length) errors.push(required("spec.containers"));
  errors.push(...validateContainers(spec.initContainers ?? [], "spec.initContainers", seen), ...validateContainers(spec.containers ?? [], "spec.containers", seen));
  if (spec.restartPolicy !== undefined && !RESTART_POLICIES.includes(spec.restartPolicy)) errors.push(notSupported("spec.restartPolicy", spec.restartPolicy, RESTART_POLICIES));
  if (spec.serviceAccountName) errors.push(...validateNameRule("spec.serviceAccountName", spec.serviceAccountName, dns1123SubdomainProblem));
  return [...errors, ...validatePhase(obj)];
}

function validatePhase(obj: ApiObject): FieldError[] {
  const phase = (obj as Pod).status?.phase;
  return phase === undefined || POD_PHASES.includes(phase) ? [] : [notSupported("status.phase", phase, POD_PHASES)];
}

/** The spec with container images blanked: what an update may not change. */
function withoutImages(spec: unknown): unknown {
  if (!isRecord(spec)) return spec;
  const strip = (list: unknown) => (Array.isArray(list) ? list.map((c) => (isRecord(c) ? { ...c, image: undefined } : c)) : list);
  return { ...spec, containers: strip(spec.containers), initContainers: strip(spec.initContainers) };
}

const strategy = buildStrategy({
  schema,
  prepareForCreate(obj) {
    if (isRecord(obj.spec) && obj.spec.restartPolicy === undefined) obj.spec.restartPolicy = "Always";
    obj.status = { phase: "Pending" };
  },
  prepareForUpdate(next, previous) {
    if (previous.status === undefined) delete next.status;
    else next.status = copyPlain(previous.status);
  },
  validate: validatePod,
  validateUpdate(next, previous) {
    if (deepEqual(withoutImages(next.spec), withoutImages(previous.spec))) return [];
    return [forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image` and `spec.initContainers[*].image`")];
  },
  specChanged,
  subresources: { status: statusSubresource({ schema, validateUpdate: validatePhase }) },
});

function row(obj: ApiObject, now: Date): unknown[] {
  const pod = obj as Pod;
  const total = Array.isArray(pod.spec?.containers) ? pod.spec.containers.length : 0;
  const statuses = Array.isArray(pod.status?.containerStatuses) ? pod.status.containerStatuses : [];
  const ready = statuses.filter((s) => s?.ready === true).length;
  const restarts = statuses.reduce((n, s) => n + (typeof s?.restartCount === "number" ? s.restartCount : 0), 0);
  const status = obj.metadata.deletionTimestamp ? "Terminating" : pod.status?.reason || pod.status?.phase || "";
  return [obj.metadata.name, `${ready}/${total}`, status, restarts, since(obj.metadata.creationTimestamp, now), pod.status?.podIP || "<none>", pod.spec?.nodeName || "<none>"];
}

export function podDefinition(): ResourceDefinition {
  return defineResource({
    group: "",
    version: CORE_VERSION,
    kind: POD_KIND,
    plural: "pods",
    shortNames: ["po"],
    // As upstream: `kubectl get all` lists the kinds of this category.
    categories: ["all"],
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: [
      nameColumn,
      column("Ready", "Ready containers of all containers."),
      column("Status", "Phase, or the reason the pod is in it."),
      column("Restarts", "Container restarts.", 0, "integer"),
      ageColumn,
      column("IP", "Pod IP address.", 1),
      column("Node", "Node the pod runs on.", 1),
    ],
    row,
    strategy,
  });
}

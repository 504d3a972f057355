// A write request as a ResourceStore takes it in: its body checked against the endpoint, and the attributes admission sees.
import type { ApiObject } from "../../api/meta.js";
import { plainValueProblem } from "../../plain-data.js";
import { requestHooks, type RequestAttributes } from "../pipeline.js";
import type { ResourceDefinition } from "./strategy.js";
import { badRequest, invalidOne } from "./errors.js";
import type { WriteOptions } from "./store-types.js";
import { fillTypeMeta } from "./type-meta.js";

/** Validates body shape against the endpoint: an object of this kind (filled when missing), namespace and name as the path says. */
export function checkBody(def: ResourceDefinition, apiVersion: string, body: unknown, namespace: string | undefined, name: string | undefined): ApiObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("the request body must be a JSON or YAML object");
  // Decoding bounds what clients send; this bounds what a patch makes of it, before any copy or serialization.
  const problem = plainValueProblem(body);
  if (problem) throw badRequest(`the object is refused: ${problem}`);
  fillTypeMeta(body as Record<string, unknown>, { apiVersion, kind: def.kind });
  const obj = body as ApiObject;
  if (obj.metadata === undefined) obj.metadata = {};
  if (typeof obj.metadata !== "object" || obj.metadata === null || Array.isArray(obj.metadata)) throw badRequest("metadata must be an object");
  const m = obj.metadata;
  for (const f of ["name", "generateName", "namespace", "resourceVersion", "uid"] as const) {
    if (m[f] !== undefined && typeof m[f] !== "string") throw invalidOne(def, String(m.name ?? name ?? ""), `metadata.${f}`, "must be a string", "FieldValueTypeInvalid");
  }
  if (m.resourceVersion === "") delete m.resourceVersion;
  if (def.namespaced) {
    if (m.namespace && m.namespace !== namespace) throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    m.namespace = namespace;
  } else delete m.namespace;
  if (name !== undefined) {
    if (m.name && m.name !== name) throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${name})`);
    m.name = name;
  }
  return obj;
}

/**
 * Drops what upstream's ObjectMeta leaves out when empty (`omitempty`): labels and annotations without an entry,
 * finalizers and ownerReferences without an item. Upstream decodes every body into its Go type and never writes those
 * back, so a client that sends `annotations: {}` (kubectl diff and apply do) finds the object as it was: no new
 * revision, no field recorded for it, and nothing for `kubectl diff` to report. managedFields stays: an empty list there
 * asks for them to be reset.
 */
export function dropEmptyMetadata(obj: ApiObject): void {
  const m = obj.metadata as Record<string, unknown>;
  for (const f of ["labels", "annotations"]) {
    const v = m[f];
    if (typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 0) delete m[f];
  }
  for (const f of ["finalizers", "ownerReferences"]) {
    const v = m[f];
    if (Array.isArray(v) && v.length === 0) delete m[f];
  }
}

/** An apply body: an object naming this kind, without managedFields (a Status 400 otherwise, nothing stored). */
export function checkApplyBody(def: ResourceDefinition, apiVersion: string, body: unknown, namespace: string | undefined, name: string): ApiObject {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("the apply patch must be a YAML or JSON object");
  const b = body as Record<string, unknown>;
  if (b.apiVersion !== apiVersion) {
    throw badRequest(`Incorrect version specified in apply patch. Specified patch version: ${typeof b.apiVersion === "string" ? b.apiVersion : ""}, expected: ${apiVersion}`);
  }
  if (b.kind !== def.kind) throw badRequest(`Incorrect kind specified in apply patch. Specified patch kind: ${typeof b.kind === "string" ? b.kind : ""}, expected: ${def.kind}`);
  const obj = checkBody(def, apiVersion, body, namespace, name);
  if (obj.metadata.managedFields !== undefined && obj.metadata.managedFields !== null) throw badRequest("metadata.managedFields must be nil");
  delete obj.metadata.managedFields;
  return obj;
}

/** The admission attributes of a write of `verb` to this resource. */
export function requestAttributes(def: ResourceDefinition, verb: string, opts: WriteOptions, namespace: string | undefined, name: string | undefined): RequestAttributes {
  return {
    user: opts.user ?? { username: "system:anonymous" },
    verb,
    resourceRequest: true,
    path: "",
    group: def.group,
    version: def.version,
    resource: def.plural,
    subresource: opts.subresource,
    namespace,
    name,
    kind: def.kind,
    dryRun: opts.dryRun,
    ...requestHooks(opts),
  };
}

// DeleteOptions of a delete or deletecollection, from the query and the body, decoded and validated along one path.
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import type { DeleteOptions } from "../registry/store-types.js";
import type { FieldError } from "../registry/strategy.js";
import { decodeBody } from "./content.js";
import { bool, int, one, type RawQuery } from "./query.js";

/** The DeleteOptions fields this server reads, decoded but not yet validated. */
interface RawDeleteOptions {
  dryRun?: readonly string[];
  gracePeriodSeconds?: number;
  propagationPolicy?: string;
  orphanDependents?: boolean;
  preconditions?: { uid?: string; resourceVersion?: string };
}

const PROPAGATION_POLICIES = ["Foreground", "Background", "Orphan"] as const;
/** The apiVersions a DeleteOptions body may name (upstream decodes both into meta.k8s.io/v1). */
const API_VERSIONS = ["v1", "meta.k8s.io/v1"];

const bad = (message: string) => new PlatformError("BAD_REQUEST", message);

/**
 * The options of a delete: the body's DeleteOptions where it sets a field, the query's otherwise. A value that
 * cannot be decoded (wrong JSON type, not an integer, a body that is not a DeleteOptions) is a 400 BadRequest; a
 * decoded value that is not allowed is a 422 Invalid, as upstream's ValidateDeleteOptions. Both happen before
 * anything is read or deleted.
 */
export function deleteOptions(query: RawQuery, body: Buffer | undefined, contentType: string | undefined, user: UserInfo): DeleteOptions {
  const fromQuery = queryOptions(query);
  validate(fromQuery);
  const fromBody = bodyOptions(body, contentType);
  const merged: RawDeleteOptions = { ...fromQuery };
  for (const [k, v] of Object.entries(fromBody)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  validate(merged);
  return {
    dryRun: (merged.dryRun?.length ?? 0) > 0,
    user,
    ...(merged.preconditions ? { preconditions: merged.preconditions } : {}),
    // The deprecated orphanDependents is a policy too (validate() refuses both together).
    ...(merged.propagationPolicy !== undefined
      ? { propagationPolicy: merged.propagationPolicy }
      : merged.orphanDependents !== undefined
        ? { propagationPolicy: merged.orphanDependents ? "Orphan" : "Background" }
        : {}),
    ...(merged.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: merged.gracePeriodSeconds } : {}),
  };
}

function queryOptions(q: RawQuery): RawDeleteOptions {
  const out: RawDeleteOptions = {};
  const dry = q.dryRun;
  const dryRun = (Array.isArray(dry) ? dry : dry === undefined ? [] : [dry]).filter((s) => s !== "");
  if (dryRun.length > 0) out.dryRun = dryRun;
  // Negative values decode; validate() refuses them with upstream's 422.
  const grace = int(q, "gracePeriodSeconds");
  if (grace !== undefined) out.gracePeriodSeconds = grace;
  // An empty value is no value, as for every other parameter.
  const policy = one(q, "propagationPolicy") || undefined;
  if (policy !== undefined) out.propagationPolicy = policy;
  const orphan = bool(q, "orphanDependents");
  if (orphan !== undefined) out.orphanDependents = orphan;
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function bodyOptions(raw: Buffer | undefined, contentType: string | undefined): RawDeleteOptions {
  if (!raw || raw.toString("utf8").trim() === "") return {};
  const body = decodeBody(raw, contentType);
  if (!isObject(body)) throw bad("the request body must be a DeleteOptions object");
  const { kind, apiVersion } = body;
  if ((kind !== undefined && kind !== "DeleteOptions") || (apiVersion !== undefined && !API_VERSIONS.includes(apiVersion as string))) {
    throw bad(`the request body is a ${String(apiVersion ?? "")}, ${String(kind ?? "")}; a delete takes a DeleteOptions (apiVersion v1 or meta.k8s.io/v1) or no body`);
  }
  const field = (name: string, expected: string, ok: (v: unknown) => boolean): unknown => {
    const v = body[name];
    if (v === undefined || v === null) return undefined;
    if (!ok(v)) throw bad(`DeleteOptions.${name} must be ${expected}, got ${JSON.stringify(v)}`);
    return v;
  };
  const out: RawDeleteOptions = {};
  const dryRun = field("dryRun", "a list of strings", (v) => Array.isArray(v) && v.every((s) => typeof s === "string")) as string[] | undefined;
  if (dryRun !== undefined) out.dryRun = dryRun;
  const grace = field("gracePeriodSeconds", "an integer", (v) => Number.isSafeInteger(v)) as number | undefined;
  if (grace !== undefined) out.gracePeriodSeconds = grace;
  const policy = field("propagationPolicy", "a string", (v) => typeof v === "string") as string | undefined;
  if (policy !== undefined) out.propagationPolicy = policy;
  const orphan = field("orphanDependents", "true or false", (v) => typeof v === "boolean") as boolean | undefined;
  if (orphan !== undefined) out.orphanDependents = orphan;
  const pre = field("preconditions", "an object with string uid and resourceVersion", (v) => isObject(v) && ["uid", "resourceVersion"].every((k) => v[k] === undefined || v[k] === null || typeof v[k] === "string")) as
    | { uid?: string | null; resourceVersion?: string | null }
    | undefined;
  if (pre !== undefined) {
    out.preconditions = {};
    if (typeof pre.uid === "string") out.preconditions.uid = pre.uid;
    if (typeof pre.resourceVersion === "string") out.preconditions.resourceVersion = pre.resourceVersion;
  }
  return out;
}

/** Upstream's ValidateDeleteOptions (and a non-negative grace period): every problem as a cause of one 422. */
function validate(o: RawDeleteOptions): void {
  const errors: FieldError[] = [];
  if (o.orphanDependents !== undefined && o.propagationPolicy !== undefined) {
    errors.push({ field: "propagationPolicy", reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(o.propagationPolicy)}: orphanDependents and deletionPropagation cannot be both set` });
  }
  if (o.propagationPolicy !== undefined && !(PROPAGATION_POLICIES as readonly string[]).includes(o.propagationPolicy)) {
    errors.push({ field: "propagationPolicy", reason: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(o.propagationPolicy)}: supported values: ${PROPAGATION_POLICIES.map((p) => JSON.stringify(p)).join(", ")}` });
  }
  if (o.dryRun?.some((v) => v !== "All")) {
    errors.push({ field: "dryRun", reason: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(o.dryRun)}: supported values: "All"` });
  }
  if (o.gracePeriodSeconds !== undefined && o.gracePeriodSeconds < 0) {
    errors.push({ field: "gracePeriodSeconds", reason: "FieldValueInvalid", message: `Invalid value: ${o.gracePeriodSeconds}: must be greater than or equal to 0` });
  }
  if (errors.length === 0) return;
  const list = errors.map((e) => `${e.field}: ${e.message}`);
  throw new PlatformError("INVALID", `DeleteOptions.meta.k8s.io "" is invalid: ${list.length === 1 ? list[0] : `[${list.join(", ")}]`}`, {
    causes: errors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
    details: { group: "meta.k8s.io", kind: "DeleteOptions" },
  });
}

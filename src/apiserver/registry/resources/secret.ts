// Secret (core v1, namespaced): config-key names, base64 values up to 1 MiB, stringData folded into data, immutable secrets.
import { Buffer } from "node:buffer";
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CORE_VERSION, SECRET_KIND, type Secret } from "../../../api/types/core.js";
import type { FieldError, ResourceDefinition, StrategyContext } from "../strategy.js";
import { configKeyProblem, decodeBase64, immutable, invalid, key, required, tooLong } from "../validation.js";
import { buildStrategy, frozenWhenImmutable, isRecord, defineResource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";

export const MAX_SECRET_BYTES = 1024 * 1024;
export const SECRET_TYPE_OPAQUE = "Opaque";

/** stringData is a write-only convenience: its entries win over data's, base64-encoded, and it is never stored. */
function foldStringData(obj: ApiObject): void {
  const { stringData } = obj;
  if (isRecord(stringData) && (obj.data === undefined || isRecord(obj.data))) {
    const data: Record<string, unknown> = { ...(obj.data ?? {}) };
    for (const [k, v] of Object.entries(stringData)) if (typeof v === "string") data[k] = Buffer.from(v, "utf8").toString("base64");
    obj.data = data;
    delete obj.stringData;
  }
  if (obj.type === undefined || obj.type === "") obj.type = SECRET_TYPE_OPAQUE;
}

function validateData(secret: Secret): FieldError[] {
  const errors: FieldError[] = [];
  let total = 0;
  for (const [k, v] of Object.entries(secret.data ?? {})) {
    const why = configKeyProblem(k);
    if (why) errors.push(invalid("data", k, why));
    const bytes = decodeBase64(v);
    if (bytes) total += bytes.length;
    else errors.push(invalid(key("data", k), "<value omitted>", "must be base64-encoded"));
  }
  if (total > MAX_SECRET_BYTES) errors.push(tooLong("data", MAX_SECRET_BYTES));
  return errors;
}

function validateType(secret: Secret, ctx: StrategyContext): FieldError[] {
  // Typed secrets of the naming profile (`platform.io/tls`, `kubernetes.io/tls`...) and what they must carry.
  const types = ctx.names.secretTypes;
  const has = (k: string) => secret.data?.[k] !== undefined;
  if (secret.type === types.tls) {
    return ["tls.crt", "tls.key"].filter((k) => !has(k)).map((k) => required(key("data", k)));
  }
  if (secret.type === types.serviceAccountToken && !secret.metadata.annotations?.[types.serviceAccountNameAnnotation]) {
    return [required(key("metadata.annotations", types.serviceAccountNameAnnotation))];
  }
  return [];
}

const strategy = buildStrategy({
  schema: kindSchema(SECRET_KIND),
  prepareForCreate: foldStringData,
  prepareForUpdate: foldStringData,
  validate: (obj, ctx) => [...validateData(obj as Secret), ...validateType(obj as Secret, ctx)],
  validateUpdate: (next, previous) => [...(next.type === previous.type ? [] : [immutable("type", next.type)]), ...frozenWhenImmutable(next, previous, ["data"])],
});

export function secretDefinition(): ResourceDefinition {
  return defineResource({
    group: "",
    version: CORE_VERSION,
    kind: SECRET_KIND,
    plural: "secrets",
    namespaced: true,
    nameRule: "dns-subdomain",
    // As upstream: the token controller (and `kubectl get secrets --field-selector type=...`) selects by type.
    fieldSelectors: { type: (obj) => (typeof obj.type === "string" ? obj.type : undefined) },
    columns: [nameColumn, column("Type", "The type of the secret."), column("Data", "Number of data entries.", 0, "integer"), ageColumn],
    row: (obj, now) => [obj.metadata.name, obj.type ?? "", isRecord(obj.data) ? Object.keys(obj.data).length : 0, since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

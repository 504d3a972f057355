// ConfigMap (core v1, namespaced): config-key names, text and base64 entries up to 1 MiB together, immutable maps.
import { Buffer } from "node:buffer";
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CONFIG_MAP_KIND, CORE_VERSION, type ConfigMap } from "../../../api/types/core.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { configKeyProblem, decodeBase64, invalid, key, tooLong } from "../validation.js";
import { MAX_SECRET_BYTES } from "./secret.js";
import { buildStrategy, frozenWhenImmutable, isRecord, defineResource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";

/** Upstream's ValidateConfigMap: key names, a key in both maps, the total size (as a Secret's, 1 MiB). */
function validateConfigMap(obj: ApiObject): FieldError[] {
  const cm = obj as ConfigMap;
  const errors: FieldError[] = [];
  const data = cm.data ?? {};
  const binary = cm.binaryData ?? {};
  let total = 0;
  for (const [k, v] of Object.entries(data)) {
    const why = configKeyProblem(k);
    if (why) errors.push(invalid(key("data", k), k, why));
    if (Object.hasOwn(binary, k)) errors.push(invalid(key("data", k), k, "duplicate of key present in binaryData"));
    if (typeof v === "string") total += Buffer.byteLength(v, "utf8");
  }
  for (const [k, v] of Object.entries(binary)) {
    const why = configKeyProblem(k);
    if (why) errors.push(invalid(key("binaryData", k), k, why));
    if (typeof v !== "string") continue;
    const bytes = decodeBase64(v);
    if (bytes) total += bytes.length;
    else errors.push(invalid(key("binaryData", k), "<value omitted>", "must be base64-encoded"));
  }
  if (total > MAX_SECRET_BYTES) errors.push(tooLong("data", MAX_SECRET_BYTES));
  return errors;
}

const strategy = buildStrategy({
  schema: kindSchema(CONFIG_MAP_KIND),
  validate: validateConfigMap,
  validateUpdate: (next, previous) => frozenWhenImmutable(next, previous, ["data", "binaryData"]),
});

/** Entries of both maps, as kubectl's DATA column counts them. */
function entries(obj: ApiObject): number {
  const count = (m: unknown) => (isRecord(m) ? Object.keys(m).length : 0);
  return count(obj.data) + count(obj.binaryData);
}

export function configMapDefinition(): ResourceDefinition {
  return defineResource({
    group: "",
    version: CORE_VERSION,
    kind: CONFIG_MAP_KIND,
    plural: "configmaps",
    shortNames: ["cm"],
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: [nameColumn, column("Data", "Number of entries in data and binaryData.", 0, "integer"), ageColumn],
    row: (obj, now) => [obj.metadata.name, entries(obj), since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

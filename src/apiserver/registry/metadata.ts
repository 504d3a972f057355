// Server-owned object metadata: names and generateName, uid, timestamps, generation, labels/annotations rules.
import { randomUUID, randomInt } from "node:crypto";
import type { ApiObject, ObjectMeta } from "../../api/meta.js";
import type { FieldError, ResourceDefinition } from "./strategy.js";
import { immutable } from "../../api/field-errors.js";
import { labelValueProblem, nameProblem, qualifiedNameProblem } from "../../api/names.js";
import { rfc3339 } from "../../time/rfc3339.js";

export const MAX_ANNOTATIONS_BYTES = 256 * 1024;
/** Upstream's generateName alphabet: no vowels (no accidental words) and no look-alike digits. */
const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const GENERATED_SUFFIX = 5;

/** Longest prefix a generated name keeps, as upstream: with the suffix it still fits a 63-character DNS label. */
const MAX_GENERATED_PREFIX = 63 - GENERATED_SUFFIX;

/** A name for `generateName`: the prefix (cut to 58 characters, as upstream) plus five random characters. */
export function generateName(prefix: string): string {
  let suffix = "";
  for (let i = 0; i < GENERATED_SUFFIX; i++) suffix += SUFFIX_ALPHABET[randomInt(SUFFIX_ALPHABET.length)];
  return prefix.slice(0, MAX_GENERATED_PREFIX) + suffix;
}

const invalid = (field: string, message: string): FieldError => ({ field, message, reason: "FieldValueInvalid" });

/** Rules every object's metadata obeys, whatever its kind. */
export function validateMetadata(def: ResourceDefinition, meta: ObjectMeta): FieldError[] {
  const errors: FieldError[] = [];
  if (!meta.name) errors.push({ field: "metadata.name", message: "name or generateName is required", reason: "FieldValueRequired" });
  else {
    const why = nameProblem(def.nameRule, meta.name);
    if (why) errors.push(invalid("metadata.name", `Invalid value: ${JSON.stringify(meta.name)}: ${why}`));
  }
  errors.push(...mapProblems(meta.labels, "metadata.labels", true), ...mapProblems(meta.annotations, "metadata.annotations", false));
  if (meta.annotations && typeof meta.annotations === "object") {
    let size = 0;
    for (const [k, v] of Object.entries(meta.annotations)) size += Buffer.byteLength(k) + Buffer.byteLength(String(v));
    if (size > MAX_ANNOTATIONS_BYTES) {
      errors.push({ field: "metadata.annotations", message: `Too long: must have at most ${MAX_ANNOTATIONS_BYTES} bytes, got ${size}`, reason: "FieldValueTooLong" });
    }
  }
  if (meta.finalizers !== undefined) {
    if (!Array.isArray(meta.finalizers)) errors.push({ field: "metadata.finalizers", message: "must be a list of strings", reason: "FieldValueTypeInvalid" });
    else {
      meta.finalizers.forEach((f, i) => {
        const why = typeof f === "string" ? qualifiedNameProblem(f) : "must be a string";
        if (why) errors.push(invalid(`metadata.finalizers[${i}]`, `Invalid value: ${JSON.stringify(f)}: ${why}`));
      });
    }
  }
  return errors;
}

function mapProblems(map: unknown, field: string, labels: boolean): FieldError[] {
  if (map === undefined || map === null) return [];
  if (typeof map !== "object" || Array.isArray(map)) return [{ field, message: "must be a map of strings", reason: "FieldValueTypeInvalid" }];
  const errors: FieldError[] = [];
  for (const [k, v] of Object.entries(map)) {
    const keyWhy = qualifiedNameProblem(k);
    if (keyWhy) errors.push(invalid(field, `Invalid value: ${JSON.stringify(k)}: ${keyWhy}`));
    if (typeof v !== "string") errors.push({ field: `${field}[${k}]`, message: "must be a string", reason: "FieldValueTypeInvalid" });
    else if (labels) {
      const valueWhy = labelValueProblem(v);
      if (valueWhy) errors.push(invalid(`${field}[${k}]`, `Invalid value: ${JSON.stringify(v)}: ${valueWhy}`));
    }
  }
  return errors;
}

/** Server-set metadata of a new object; the client's values for these fields are ignored as upstream does. */
export function initCreateMetadata(obj: ApiObject, now: Date): void {
  const m = obj.metadata;
  m.uid = randomUUID();
  m.creationTimestamp = rfc3339(now);
  m.generation = 1;
  delete m.resourceVersion;
  delete m.deletionTimestamp;
  delete m.deletionGracePeriodSeconds;
}

/**
 * Carries the fields clients may not change on update from the stored object, as upstream's BeforeUpdate: an
 * empty uid, and any creationTimestamp, generation or set deletionTimestamp, is the stored one; a removed
 * deletionGracePeriodSeconds is restored. What upstream's ValidateObjectMetaUpdate still refuses is returned
 * (a 422 for the caller): another uid, a deletionTimestamp set by a write, another deletionGracePeriodSeconds.
 */
export function keepSystemMetadata(next: ApiObject, previous: ApiObject): FieldError[] {
  const m = next.metadata as Record<string, unknown>;
  const p = previous.metadata as Record<string, unknown>;
  const errors: FieldError[] = [];
  const refuse = (f: string) => {
    errors.push(immutable(`metadata.${f}`, m[f]));
    m[f] = p[f];
  };
  if (m.uid === undefined || m.uid === "") m.uid = p.uid;
  else if (m.uid !== p.uid) refuse("uid");
  if (p.deletionTimestamp === undefined && m.deletionTimestamp !== undefined && m.deletionTimestamp !== null) refuse("deletionTimestamp");
  const grace = m.deletionGracePeriodSeconds;
  if (grace !== undefined && grace !== null && grace !== p.deletionGracePeriodSeconds) refuse("deletionGracePeriodSeconds");
  for (const f of ["uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName"] as const) {
    if (p[f] === undefined) delete m[f];
    else m[f] = p[f];
  }
  return errors;
}

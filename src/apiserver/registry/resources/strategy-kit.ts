// Builds ResourceStrategy objects from a kind's field schema and rules: type checks first, then rules, plus shared update functions.
import type { ApiObject } from "../../../api/meta.js";
import type { ObjectNode } from "../../../api/schema.js";
import type { FieldError, ResourceDefinition, ResourceStrategy, StrategyContext, SubresourceStrategy, Verb } from "../strategy.js";
import { dropNulls, ownFields, typeErrors } from "../type-check.js";
import { forbidden, immutable } from "../validation.js";
import { copyPlain } from "../../../plain-data.js";

export const STANDARD_VERBS: readonly Verb[] = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
export const CREATE_ONLY_VERBS: readonly Verb[] = ["create"];
export const SUBRESOURCE_VERBS: readonly Verb[] = ["get", "update", "patch"];

type DefinitionParts = Omit<ResourceDefinition, "listKind" | "singular" | "verbs"> & Partial<Pick<ResourceDefinition, "verbs">>;

/** A definition with the derivable names filled in: `<Kind>List`, the lower-case singular, and all standard verbs. */
export function defineResource(parts: DefinitionParts): ResourceDefinition {
  return { listKind: `${parts.kind}List`, singular: parts.kind.toLowerCase(), verbs: STANDARD_VERBS, ...parts };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface StrategyParts {
  /** The kind's root field schema (`kindSchema(KIND)`); its own fields are type-checked, the envelope is the registry's. */
  readonly schema: ObjectNode;
  prepareForCreate?(obj: ApiObject, ctx: StrategyContext): void;
  prepareForUpdate?(next: ApiObject, previous: ApiObject, ctx: StrategyContext): void;
  /** Rules on a well-typed object; not called when type checks fail. */
  validate?(obj: ApiObject, ctx: StrategyContext): FieldError[];
  /** Update rules on a well-typed object; not called when type checks fail. */
  validateUpdate?(next: ApiObject, previous: ApiObject, ctx: StrategyContext): FieldError[];
  /** Defaults to: anything but metadata and status changed. */
  specChanged?(next: ApiObject, previous: ApiObject): boolean;
  readonly subresources?: Readonly<Record<string, SubresourceStrategy>>;
  readonly deletion?: ResourceStrategy["deletion"];
  readonly checkAhead?: ResourceStrategy["checkAhead"];
}

export function buildStrategy(parts: StrategyParts): ResourceStrategy {
  const own = ownFields(parts.schema);
  return {
    prepareForCreate(obj, ctx) {
      dropNulls(obj, own);
      parts.prepareForCreate?.(obj, ctx);
    },
    validate(obj, ctx) {
      const errors = typeErrors(obj, own);
      return errors.length > 0 || !parts.validate ? errors : parts.validate(obj, ctx);
    },
    prepareForUpdate(next, previous, ctx) {
      dropNulls(next, own);
      parts.prepareForUpdate?.(next, previous, ctx);
    },
    validateUpdate(next, previous, ctx) {
      // validate(next) has already reported type errors; rules below assume a well-typed object.
      if (!parts.validateUpdate || typeErrors(next, own).length > 0) return [];
      return parts.validateUpdate(next, previous, ctx);
    },
    specChanged: parts.specChanged ?? contentChanged,
    ...(parts.subresources ? { subresources: parts.subresources } : {}),
    ...(parts.deletion ? { deletion: parts.deletion } : {}),
    ...(parts.checkAhead ? { checkAhead: parts.checkAhead } : {}),
  };
}

export interface StatusParts {
  /** The kind's root field schema, as for buildStrategy. */
  readonly schema: ObjectNode;
  /** Runs after everything but the subresource's field (and metadata) was taken from the stored object. */
  prepareForUpdate?(next: ApiObject, previous: ApiObject, ctx: StrategyContext): void;
  validateUpdate?(next: ApiObject, previous: ApiObject, ctx: StrategyContext): FieldError[];
}

/** A `/status` subresource: writes change `status` only; the main resource's fields come from the stored object. */
export function statusSubresource(parts: StatusParts): SubresourceStrategy {
  return fieldSubresource("status", SUBRESOURCE_VERBS, parts);
}

/** A subresource whose writes change the top-level `field` only (`/status`, a Namespace's `/finalize` on `spec`). */
export function fieldSubresource(field: string, verbs: readonly Verb[], parts: StatusParts): SubresourceStrategy {
  const own = ownFields(parts.schema);
  return {
    verbs,
    prepareForUpdate(next, previous, ctx) {
      keepAllBut(next, previous, [field]);
      dropNulls(next, own);
      parts.prepareForUpdate?.(next, previous, ctx);
    },
    validateUpdate(next, previous, ctx) {
      const errors = typeErrors(next, own);
      return errors.length > 0 || !parts.validateUpdate ? errors : parts.validateUpdate(next, previous, ctx);
    },
  };
}

/** Copies every top-level field but metadata and `except` from `previous` onto `next` (dropping ones `previous` lacks). */
export function keepAllBut(next: ApiObject, previous: ApiObject, except: readonly string[]): void {
  const skip = new Set(["metadata", ...except]);
  for (const k of Object.keys(next)) if (!skip.has(k) && !(k in previous)) delete next[k];
  for (const [k, v] of Object.entries(previous)) if (!skip.has(k)) next[k] = copyPlain(v);
}

/** Whether a value is what an unset field decodes to upstream (absent, null, "", [] or {}). */
function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0) || (isRecord(v) && Object.keys(v).length === 0);
}

/** Semantic JSON equality: key order does not matter, and empty values equal absent ones (as upstream compares). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (isEmpty(a) && isEmpty(b)) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isRecord(a) && isRecord(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) if (!deepEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

/** The value at a dotted path (`spec.signerName`), undefined when any step is missing. */
export function valueAt(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const step of path.split(".")) {
    if (!isRecord(cur)) return undefined;
    cur = cur[step];
  }
  return cur;
}

/** "field is immutable" for each dotted path whose value differs between `next` and `previous`. */
export function immutableFields(next: ApiObject, previous: ApiObject, paths: readonly string[]): FieldError[] {
  return paths.filter((p) => !deepEqual(valueAt(next, p), valueAt(previous, p))).map((p) => immutable(p, valueAt(next, p)));
}

/**
 * Upstream's rule for a Secret's and a ConfigMap's `immutable`: once stored true it stays, and the `fields` it freezes
 * may not change.
 */
export function frozenWhenImmutable(next: ApiObject, previous: ApiObject, fields: readonly string[]): FieldError[] {
  if (previous.immutable !== true) return [];
  const why = "field is immutable when `immutable` is set";
  return [...(next.immutable === true ? [] : [forbidden("immutable", why)]), ...fields.filter((f) => !deepEqual(next[f], previous[f])).map((f) => forbidden(f, why))];
}

/** Whether anything but metadata and status changed: what generation counts for kinds without a spec. */
export function contentChanged(next: ApiObject, previous: ApiObject): boolean {
  const strip = ({ metadata: _m, status: _s, ...rest }: ApiObject): Record<string, unknown> => rest;
  return !deepEqual(strip(next), strip(previous));
}

/** Whether `spec` changed: what generation counts for kinds with a spec. */
export function specChanged(next: ApiObject, previous: ApiObject): boolean {
  return !deepEqual(next.spec, previous.spec);
}

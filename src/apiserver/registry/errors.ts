// Resource-level errors with upstream's messages and Status details ({name, group, kind}).
import { PlatformError, type ErrorCode, type PlatformErrorOptions } from "../../errors.js";
import type { FieldError, ResourceDefinition } from "./strategy.js";

/** `certificatesigningrequests.certificates.platform.io`, or the bare plural for the core group. */
export function qualifiedResource(def: ResourceDefinition): string {
  return def.group ? `${def.plural}.${def.group}` : def.plural;
}

function resourceError(code: ErrorCode, def: ResourceDefinition, name: string, message: string, causes?: PlatformErrorOptions["causes"]): PlatformError {
  return new PlatformError(code, message, { details: { name, group: def.group, kind: def.plural }, ...(causes && { causes }) });
}

/** Upstream's admission refusal: `<resource> "<name>" is forbidden: <why>`. */
export function forbidden(def: ResourceDefinition, name: string, why: string, causes?: PlatformErrorOptions["causes"]): PlatformError {
  return resourceError("FORBIDDEN", def, name, `${qualifiedResource(def)} "${name}" is forbidden: ${why}`, causes);
}

export function notFound(def: ResourceDefinition, name: string): PlatformError {
  return resourceError("NOT_FOUND", def, name, `${qualifiedResource(def)} "${name}" not found`);
}

export function alreadyExists(def: ResourceDefinition, name: string): PlatformError {
  return resourceError("ALREADY_EXISTS", def, name, `${qualifiedResource(def)} "${name}" already exists`);
}

export function conflict(def: ResourceDefinition, name: string, why = "the object has been modified; please apply your changes to the latest version and try again"): PlatformError {
  return resourceError("CONFLICT", def, name, `Operation cannot be fulfilled on ${qualifiedResource(def)} "${name}": ${why}`);
}

export function invalid(def: ResourceDefinition, name: string, errors: readonly FieldError[]): PlatformError {
  const kind = def.group ? `${def.kind}.${def.group}` : def.kind;
  const list = errors.map((e) => `${e.field}: ${e.message}`);
  const summary = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return new PlatformError("INVALID", `${kind} "${name}" is invalid: ${summary}`, {
    causes: errors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
    details: { name, group: def.group, kind: def.kind },
  });
}

export function badRequest(message: string): PlatformError {
  return new PlatformError("BAD_REQUEST", message);
}

/** An Invalid error of one field (the reason defaults to FieldValueInvalid). */
export function invalidOne(def: ResourceDefinition, name: string, field: string, message: string, reason: FieldError["reason"] = "FieldValueInvalid"): PlatformError {
  return invalid(def, name, [{ field, message, reason }]);
}

// JSON value helpers shared by the three patch formats: deep copies, `__proto__`-safe keys, typed patch errors.
import { PlatformError, type ErrorCause } from "../../errors.js";

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A deep copy through JSON text: what the patch functions work on, so their inputs are never touched. */
export function cloneJson<T>(value: T): T {
  if (value === undefined) return value;
  try {
    return JSON.parse(JSON.stringify(value)) as T;
  } catch (cause) {
    if (cause instanceof RangeError) throw cause;
    throw new PlatformError("INVALID_ARGUMENT", "the document or patch is not a JSON value", { cause });
  }
}

/** Sets an own property, also for the key `__proto__` (plain assignment would change the prototype instead). */
export function setOwn(obj: JsonObject, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

export function patchInvalid(message: string, field?: string): PlatformError {
  const causes: ErrorCause[] = [{ reason: "FieldValueInvalid", message, ...(field ? { field } : {}) }];
  return new PlatformError("PATCH_INVALID", message, { causes });
}

/** Runs a patch step, turning a stack overflow on absurdly deep input into a typed error. */
export function guardDepth<T>(run: () => T): T {
  try {
    return run();
  } catch (e) {
    if (e instanceof RangeError) throw new PlatformError("PATCH_INVALID", "the document or patch is nested too deeply", { cause: e });
    throw e;
  }
}

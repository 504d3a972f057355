// Reads an untyped policy document field by field, collecting every problem with its path instead of stopping at the first.
import type { ErrorCause } from "../src/errors.js";

export type Doc = Readonly<Record<string, unknown>>;

export class FieldReader {
  readonly issues: ErrorCause[] = [];

  problem(field: string, message: string): undefined {
    this.issues.push({ field, message, reason: "FieldValueInvalid" });
    return undefined;
  }

  /** An object whose keys are all in `known`; absent (undefined/null) gives `{}` so callers read defaults. */
  object(value: unknown, field: string, known: readonly string[]): Doc | undefined {
    if (value === undefined || value === null) return {};
    if (typeof value !== "object" || Array.isArray(value)) return this.problem(field, `expected a mapping, got ${describe(value)}`);
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) this.problem(join(field, key), `unknown field; known fields: ${known.join(", ")}`);
    }
    return value as Doc;
  }

  string(value: unknown, field: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string" || value.length === 0) return this.problem(field, `expected a non-empty string, got ${describe(value)}`);
    return value;
  }

  boolean(value: unknown, field: string, fallback: boolean): boolean {
    if (value === undefined || value === null) return fallback;
    if (typeof value !== "boolean") {
      this.problem(field, `expected true or false, got ${describe(value)}`);
      return fallback;
    }
    return value;
  }

  integer(value: unknown, field: string, min: number): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
      return this.problem(field, `expected a whole number ≥ ${min}, got ${describe(value)}`);
    }
    return value;
  }

  oneOf<T extends string>(value: unknown, field: string, choices: readonly T[], fallback: T): T {
    if (value === undefined || value === null) return fallback;
    if (typeof value !== "string" || !(choices as readonly string[]).includes(value)) {
      this.problem(field, `expected one of ${choices.join(", ")}, got ${describe(value)}`);
      return fallback;
    }
    return value as T;
  }

  /** A list of non-empty strings; each entry is checked by `check`, which returns a problem or undefined. */
  strings(value: unknown, field: string, check?: (entry: string) => string | undefined): string[] {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) {
      this.problem(field, `expected a list, got ${describe(value)}`);
      return [];
    }
    const out: string[] = [];
    value.forEach((entry, i) => {
      const path = `${field}[${i}]`;
      if (typeof entry !== "string" || entry.length === 0) {
        this.problem(path, `expected a non-empty string, got ${describe(entry)}`);
        return;
      }
      const problem = check?.(entry);
      if (problem) this.problem(path, problem);
      else out.push(entry);
    });
    return out;
  }
}

export function join(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  if (typeof value === "object") return "a mapping";
  return JSON.stringify(value) ?? String(value);
}

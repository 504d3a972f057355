// The one reader of typed fields in user-written YAML/JSON: each problem is collected with its path, in one message shape.
import { PlatformError, type ErrorCause, type ErrorCode } from "../errors.js";
import { DURATION_SYNTAX, formatDuration, parseDuration } from "./duration.js";

export type Doc = Readonly<Record<string, unknown>>;

/** A value as a message should show it instead of the value itself (a secret is described, never echoed). */
export class Shown {
  constructor(readonly text: string) {}
}

/** How a value is named in a message: strings and numbers as JSON, containers by kind (their contents may be secret). */
export function describeValue(value: unknown): string {
  if (value instanceof Shown) return value.text;
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return JSON.stringify(value) ?? String(value);
}

/** The one shape of a field problem, as of an option: expected `spec.expirationSeconds` ≥ 600, got 300. */
export function fieldMessage(path: string, expectation: string, got: unknown): string {
  return `expected \`${path || "(top level)"}\` ${expectation}, got ${describeValue(got)}`;
}

export function join(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

const absent = (value: unknown): value is undefined | null => value === undefined || value === null;

export interface FieldReaderOptions {
  /** Unknown keys of an object with known keys are errors (true) or collected apart in `unknown` for the caller (false). */
  readonly unknownFieldsAreErrors?: boolean;
}

/** At most this many problems are spelled out in a message; all of them are in `causes`. */
const MESSAGE_PROBLEMS = 5;

/**
 * Reads the fields of one document. Every read takes the value and its path, returns the typed value (or the
 * fallback) and records a problem instead of throwing, so a document's problems are all reported at once.
 */
export class FieldReader {
  readonly errors: ErrorCause[] = [];
  /** Unknown fields when they are not errors; the caller warns about them or refuses them. */
  readonly unknown: ErrorCause[] = [];
  readonly #unknownAreErrors: boolean;

  constructor(options: FieldReaderOptions = {}) {
    this.#unknownAreErrors = options.unknownFieldsAreErrors ?? false;
  }

  /** Records that `path` should be `expectation` (a phrase like "a whole number ≥ 0") but holds `got`. */
  problem(path: string, expectation: string, got: unknown): undefined {
    this.errors.push({ field: path, message: fieldMessage(path, expectation, got), reason: "FieldValueInvalid" });
    return undefined;
  }

  /** Records that `path` must be set (`expectation` says with what). */
  missing(path: string, expectation = "to be set"): undefined {
    this.errors.push({ field: path, message: fieldMessage(path, expectation, undefined), reason: "FieldValueRequired" });
    return undefined;
  }

  /** A mapping (absent → undefined); with `known`, other keys are unknown fields (with a hint when only the case differs). */
  object(value: unknown, path: string, known?: readonly string[]): Doc | undefined {
    if (absent(value)) return undefined;
    if (typeof value !== "object" || Array.isArray(value)) return this.problem(path, "a mapping", value);
    if (known) for (const key of Object.keys(value)) if (!known.includes(key)) this.unknownField(path, key, known);
    return value as Doc;
  }

  /** Records key `key` of the object at `parent` as unknown, with a hint when only the case differs, else the known fields. */
  unknownField(parent: string, key: string, known: readonly string[]): void {
    const path = join(parent, key);
    const near = known.find((k) => k.toLowerCase() === key.toLowerCase());
    const help = near ? `did you mean \`${near}\`?` : `known fields: ${known.join(", ")}`;
    const cause = { field: path, message: `unknown field \`${path}\`; ${help}`, reason: "FieldValueUnknown" };
    (this.#unknownAreErrors ? this.errors : this.unknown).push(cause);
  }

  /** A list (absent → []); each item is read by `item` at `path[i]`, and items it gives undefined for are dropped. */
  list<T = unknown>(value: unknown, path: string, item?: (value: unknown, path: string) => T | undefined): T[] {
    if (absent(value)) return [];
    if (!Array.isArray(value)) return this.problem(path, "a list", value) ?? [];
    if (!item) return value as T[];
    return value.flatMap((v, i) => {
      const out = item(v, `${path}[${i}]`);
      return out === undefined ? [] : [out];
    });
  }

  /** A string (absent → undefined); `nonEmpty` refuses "". */
  string(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): string | undefined {
    if (absent(value)) return undefined;
    if (typeof value !== "string" || (options.nonEmpty && value === "")) {
      return this.problem(path, options.nonEmpty ? "a non-empty string" : "a string", value);
    }
    return value;
  }

  /** Non-empty strings (absent → []), each also checked by `check`, which returns an expectation it failed or undefined. */
  strings(value: unknown, path: string, check?: (entry: string) => string | undefined): string[] {
    return this.list(value, path, (entry, at) => {
      if (typeof entry !== "string" || entry === "") return this.problem(at, "a non-empty string", entry);
      const expectation = check?.(entry);
      return expectation === undefined ? entry : this.problem(at, expectation, entry);
    });
  }

  boolean(value: unknown, path: string, fallback: boolean): boolean;
  boolean(value: unknown, path: string): boolean | undefined;
  boolean(value: unknown, path: string, fallback?: boolean): boolean | undefined {
    if (absent(value)) return fallback;
    if (typeof value !== "boolean") return this.problem(path, "true or false", value) ?? fallback;
    return value;
  }

  /** A whole number within `min`/`max` (absent → undefined). */
  integer(value: unknown, path: string, range: { min?: number; max?: number } = {}): number | undefined {
    if (absent(value)) return undefined;
    const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = range;
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
      const bounds = range.max === undefined ? ` ≥ ${min}` : ` from ${min} to ${max}`;
      return this.problem(path, `a whole number${range.min === undefined && range.max === undefined ? "" : bounds}`, value);
    }
    return value;
  }

  /** A finite number ≥ `min`, and within float32 when `float32` (absent → undefined). */
  number(value: unknown, path: string, options: { min?: number; float32?: boolean } = {}): number | undefined {
    if (absent(value)) return undefined;
    const min = options.min ?? -Infinity;
    if (typeof value !== "number" || !Number.isFinite(value) || value < min || (options.float32 && Math.abs(value) > FLOAT32_MAX)) {
      return this.problem(path, `a ${options.float32 ? "float32" : "number"}${min > -Infinity ? ` ≥ ${min}` : ""}`, value);
    }
    return value;
  }

  oneOf<T extends string>(value: unknown, path: string, choices: readonly T[], fallback: T): T {
    if (absent(value)) return fallback;
    if (typeof value !== "string" || !(choices as readonly string[]).includes(value)) {
      return this.problem(path, `one of ${choices.join(", ")}`, value) ?? fallback;
    }
    return value as T;
  }

  /** A duration in milliseconds (absent → undefined), at least `min` ms, and whole seconds when `wholeSeconds`. */
  duration(value: unknown, path: string, options: { min?: number; wholeSeconds?: boolean } = {}): number | undefined {
    if (absent(value)) return undefined;
    const ms = parseDuration(value);
    if (ms === undefined) return this.problem(path, DURATION_SYNTAX, value);
    if (options.min !== undefined && ms < options.min) return this.problem(path, `a duration of at least ${formatDuration(options.min)}`, value);
    if (options.wholeSeconds && !Number.isInteger(ms / 1000)) return this.problem(path, "whole seconds", value);
    return ms;
  }

  /**
   * The error for everything recorded (undefined when nothing was), with `unknown` counted as errors when
   * `strict`: "invalid <what> <source>: 2 problems: expected `a` …; expected `b` …".
   */
  error(code: ErrorCode, what: string, source: string | undefined, options: { strict?: boolean; details?: Record<string, unknown> } = {}): PlatformError | undefined {
    const causes = [...this.errors, ...(options.strict ? this.unknown : [])];
    if (causes.length === 0) return undefined;
    return documentError(code, `${what}${source ? ` ${source}` : ""}`, causes, options.details);
  }

  /** Throws `error()` when there is one. */
  throwIfInvalid(code: ErrorCode, what: string, source: string | undefined, options: { strict?: boolean; details?: Record<string, unknown> } = {}): void {
    const err = this.error(code, what, source, options);
    if (err) throw err;
  }
}

const FLOAT32_MAX = 3.4028234663852886e38;

/** One error for a document's problems: "invalid <what>: <problem>" or "invalid <what>: N problems: …; …; and K more". */
export function documentError(code: ErrorCode, what: string, causes: readonly ErrorCause[], details?: Record<string, unknown>): PlatformError {
  const lines = causes.slice(0, MESSAGE_PROBLEMS).map((c) => c.message);
  const more = causes.length > MESSAGE_PROBLEMS ? `; and ${causes.length - MESSAGE_PROBLEMS} more` : "";
  const head = causes.length === 1 ? "" : `${causes.length} problems: `;
  return new PlatformError(code, `invalid ${what}: ${head}${lines.join("; ")}${more}`, { causes, ...(details ? { details } : {}) });
}

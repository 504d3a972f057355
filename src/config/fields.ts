// A small typed schema for configuration files: each field reads, type-checks and defaults one value by its path.
import type { ErrorCause } from "../errors.js";
import { formatGoDuration, GO_DURATION_SYNTAX, parseGoDuration } from "./duration.js";

/** Problems found while reading one document: errors stop the load, unknown fields are warnings (or errors when strict). */
export interface ReadContext {
  readonly errors: ErrorCause[];
  readonly unknown: { readonly path: string; readonly hint?: string }[];
}

export interface Field<T> {
  /** Reads `value` at `path`; an absent value (undefined or null) gives the default. */
  read(value: unknown, path: string, ctx: ReadContext): T;
}

export type Value<F> = F extends Field<infer T> ? T : never;
export type Shape = Readonly<Record<string, Field<unknown>>>;
export type ObjectValue<S extends Shape> = { [K in keyof S]: Value<S[K]> };

export function fail(ctx: ReadContext, path: string, message: string): void {
  ctx.errors.push({ field: path, message, reason: "FieldValueInvalid" });
}

export function describe(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  if (typeof value === "object") return "a mapping";
  return JSON.stringify(value) ?? String(value);
}

const absent = (v: unknown): v is undefined | null => v === undefined || v === null;

/** A field of one scalar type: `check` returns the value or an error message. */
function scalar<T>(fallback: T, check: (v: unknown) => T | string, isValue: (v: T | string) => v is T): Field<T> {
  return {
    read(value, path, ctx) {
      if (absent(value)) return fallback;
      const out = check(value);
      if (isValue(out)) return out;
      fail(ctx, path, out);
      return fallback;
    },
  };
}

const isNumber = (v: unknown): v is number => typeof v === "number";
const isString = (v: unknown): v is string => typeof v === "string";
const isBoolean = (v: unknown): v is boolean => typeof v === "boolean";
/** A string (a string field cannot tell a message from a value by type, so it does not use `scalar`). */
export function text(fallback = ""): Field<string> {
  return {
    read(value, path, ctx) {
      if (absent(value)) return fallback;
      if (isString(value)) return value;
      fail(ctx, path, `expected a string, got ${describe(value)}`);
      return fallback;
    },
  };
}

export function oneOf<T extends string>(choices: readonly T[], fallback: T): Field<T> {
  return {
    read(value, path, ctx) {
      if (absent(value)) return fallback;
      if (isString(value) && (choices as readonly string[]).includes(value)) return value as T;
      fail(ctx, path, `expected one of ${choices.join(", ")}, got ${describe(value)}`);
      return fallback;
    },
  };
}

export const bool = (fallback = false): Field<boolean> =>
  scalar<boolean>(fallback, (v) => (isBoolean(v) ? v : `expected true or false, got ${describe(v)}`), isBoolean);

const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };

/** A whole number within int32 (and `min`/`max` when given). */
export const int32 = (fallback = 0, range: { min?: number; max?: number } = {}): Field<number> => {
  const min = range.min ?? INT32.min;
  const max = range.max ?? INT32.max;
  return scalar<number>(
    fallback,
    (v) => (isNumber(v) && Number.isInteger(v) && v >= min && v <= max ? v : `expected a whole number from ${min} to ${max}, got ${describe(v)}`),
    isNumber,
  );
};

const FLOAT32_MAX = 3.4028234663852886e38;

export const float = (fallback = 0, bits: 32 | 64 = 64, min = -Infinity): Field<number> =>
  scalar<number>(
    fallback,
    (v) =>
      isNumber(v) && Number.isFinite(v) && (bits === 64 || Math.abs(v) <= FLOAT32_MAX) && v >= min
        ? v
        : `expected a ${bits === 32 ? "float32" : "number"}${min > -Infinity ? ` ≥ ${min}` : ""}, got ${describe(v)}`,
    isNumber,
  );

/** A Go duration string, read as milliseconds; negative values are refused unless allowed. */
export const duration = (fallback: string, options: { allowNegative?: boolean } = {}): Field<number> => {
  const def = parseGoDuration(fallback);
  if (def === undefined) throw new TypeError(`bad default duration ${fallback}`);
  return scalar<number>(
    def,
    (v) => {
      const ms = isString(v) ? parseGoDuration(v) : undefined;
      if (ms === undefined) return `expected ${GO_DURATION_SYNTAX}, got ${describe(v)}`;
      if (ms < 0 && !options.allowNegative) return `must not be negative, got ${formatGoDuration(ms)}`;
      return ms;
    },
    isNumber,
  );
};

export function list<T>(item: Field<T>, fallback: readonly T[] = []): Field<T[]> {
  return {
    read(value, path, ctx) {
      if (absent(value)) return [...fallback];
      if (!Array.isArray(value)) {
        fail(ctx, path, `expected a list, got ${describe(value)}`);
        return [...fallback];
      }
      return value.map((v, i) => item.read(v, `${path}[${i}]`, ctx));
    },
  };
}

/** Anything, kept as written (plug-in options). */
export const opaque = (): Field<unknown> => ({ read: (value) => value ?? undefined });

/** A mapping with known keys; other keys are reported as unknown (with a hint when only the case differs). */
export function object<S extends Shape>(shape: S, allow: readonly string[] = []): Field<ObjectValue<S>> {
  return {
    read(value, path, ctx) {
      let raw: Record<string, unknown> = {};
      if (!absent(value)) {
        if (typeof value === "object" && !Array.isArray(value)) raw = value as Record<string, unknown>;
        else fail(ctx, path, `expected a mapping, got ${describe(value)}`);
      }
      const out: Record<string, unknown> = {};
      // Keys in document order, so problems are reported in the order a reader meets them.
      for (const key of Object.keys(raw)) {
        if (Object.hasOwn(shape, key)) out[key] = shape[key]!.read(raw[key], join(path, key), ctx);
        else if (!allow.includes(key)) {
          const near = Object.keys(shape).find((k) => k.toLowerCase() === key.toLowerCase());
          ctx.unknown.push({ path: join(path, key), ...(near ? { hint: `did you mean ${near}?` } : {}) });
        }
      }
      for (const [key, field] of Object.entries(shape)) if (!Object.hasOwn(out, key)) out[key] = field.read(undefined, join(path, key), ctx);
      return out as ObjectValue<S>;
    },
  };
}

export function join(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

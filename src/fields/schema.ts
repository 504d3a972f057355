// Typed field schemas over the one FieldReader: each field reads, type-checks and defaults one value by its path.
import { parseDuration } from "./duration.js";
import { join, type FieldReader } from "./reader.js";

export interface Field<T> {
  /** Reads `value` at `path`; an absent value (undefined or null), or one with a problem, gives the default. */
  read(value: unknown, path: string, r: FieldReader): T;
}

export type Value<F> = F extends Field<infer T> ? T : never;
export type Shape = Readonly<Record<string, Field<unknown>>>;
export type ObjectValue<S extends Shape> = { [K in keyof S]: Value<S[K]> };

/** A string; "" is a value. */
export const text = (fallback = ""): Field<string> => ({ read: (v, path, r) => r.string(v, path) ?? fallback });

export const oneOf = <T extends string>(choices: readonly T[], fallback: T): Field<T> => ({
  read: (v, path, r) => r.oneOf(v, path, choices, fallback),
});

export const bool = (fallback = false): Field<boolean> => ({ read: (v, path, r) => r.boolean(v, path, fallback) });

const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };

/** A whole number within int32 (and `min`/`max` when given). */
export const int32 = (fallback = 0, range: { min?: number; max?: number } = {}): Field<number> => {
  const bounds = { min: range.min ?? INT32.min, max: range.max ?? INT32.max };
  return { read: (v, path, r) => r.integer(v, path, bounds) ?? fallback };
};

export const float = (fallback = 0, bits: 32 | 64 = 64, min = -Infinity): Field<number> => ({
  read: (v, path, r) => r.number(v, path, { min, float32: bits === 32 }) ?? fallback,
});

/** A duration (the one syntax of src/fields/duration.ts), read as milliseconds; negative values are refused unless allowed. */
export const duration = (fallback: string, options: { allowNegative?: boolean } = {}): Field<number> => {
  const def = parseDuration(fallback);
  if (def === undefined) throw new TypeError(`bad default duration ${fallback}`);
  const min = options.allowNegative ? undefined : 0;
  return { read: (v, path, r) => r.duration(v, path, { min }) ?? def };
};

export function list<T>(item: Field<T>, fallback: readonly T[] = []): Field<T[]> {
  return {
    read(value, path, r) {
      if (!Array.isArray(value)) {
        r.list(value, path); // records the problem when there is a value that is not a list
        return [...fallback];
      }
      return value.map((v, i) => item.read(v, `${path}[${i}]`, r));
    },
  };
}

/** Anything, kept as written (plug-in options). */
export const opaque = (): Field<unknown> => ({ read: (value) => value ?? undefined });

/** A mapping with known keys (plus `allow`ed ones it does not read); other keys are unknown fields. */
export function object<S extends Shape>(shape: S, allow: readonly string[] = []): Field<ObjectValue<S>> {
  const known = [...Object.keys(shape), ...allow];
  return {
    read(value, path, r) {
      const raw = r.object(value, path) ?? {};
      const out: Record<string, unknown> = {};
      // Keys in document order, so problems are reported in the order a reader meets them.
      for (const key of Object.keys(raw)) {
        if (Object.hasOwn(shape, key)) out[key] = shape[key]!.read(raw[key], join(path, key), r);
        else if (!allow.includes(key)) r.unknownField(path, key, known);
      }
      for (const [key, field] of Object.entries(shape)) if (!Object.hasOwn(out, key)) out[key] = field.read(undefined, join(path, key), r);
      return out as ObjectValue<S>;
    },
  };
}

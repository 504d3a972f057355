// Query parameters of the seed's parameter sets (Q-GET, Q-LIST, Q-WRITE, Q-PATCH), parsed and checked once;
// Q-DELETE and Q-DELCOLL are DeleteOptions, decoded with the body's in delete-options.ts.
import { PlatformError } from "../../errors.js";
import type { ResourceVersionMatch } from "../registry/list.js";
import type { IncludeObject } from "../table.js";

export type RawQuery = Readonly<Record<string, string | string[] | undefined>>;

export type FieldValidation = "Ignore" | "Warn" | "Strict";

export interface ListParams {
  readonly watch: boolean;
  readonly allowWatchBookmarks: boolean;
  readonly continue?: string;
  readonly fieldSelector: string;
  readonly labelSelector: string;
  readonly limit?: number;
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: ResourceVersionMatch;
  readonly sendInitialEvents?: boolean;
  readonly timeoutSeconds?: number;
  /** Table output: None, Metadata (default) or Object. */
  readonly includeObject: IncludeObject;
}

export interface WriteParams {
  readonly dryRun: boolean;
  readonly fieldManager?: string;
  readonly fieldValidation: FieldValidation;
  readonly force: boolean;
}

const bad = (message: string) => new PlatformError("BAD_REQUEST", message);

/** The first value of query parameter `name`. */
export function one(q: RawQuery, name: string): string | undefined {
  const v = q[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `pretty` as upstream reads it (Go's strconv.ParseBool: 1, t, T, TRUE, true, True; anything else is false). */
export function isPretty(q: RawQuery): boolean {
  return ["1", "t", "T", "TRUE", "true", "True"].includes(one(q, "pretty") ?? "");
}

/**
 * A boolean query value as upstream converts one (runtime.Convert_Slice_string_To_bool): "0" and any case of
 * "false" (Go's EqualFold, so the long s "ſ" matches "s") are false; every other value, the empty one too, is true.
 */
export function parseBoolValue(v: string): boolean {
  if (v === "0") return false;
  const chars = [...v];
  return !(chars.length === 5 && chars.every((c, i) => c.toUpperCase() === "FALSE"[i]));
}

/** Query parameter `name` as a boolean; absent is undefined, no value is ever refused (as upstream). */
export function bool(q: RawQuery, name: string): boolean | undefined {
  const v = one(q, name);
  return v === undefined ? undefined : parseBoolValue(v);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * An integer query value as upstream converts one (strconv.ParseInt(v, 10, 64)): an optional sign and decimal
 * digits within int64; anything else, the empty value too, is undefined. Values beyond 2^53 lose precision,
 * which no count or number of seconds notices.
 */
export function parseIntValue(v: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(v)) return undefined;
  const n = BigInt(v);
  return n < INT64_MIN || n > INT64_MAX ? undefined : Number(n);
}

/** Query parameter `name` as an integer; absent is undefined, a value ParseInt refuses is a 400. */
export function int(q: RawQuery, name: string): number | undefined {
  const v = one(q, name);
  if (v === undefined) return undefined;
  const n = parseIntValue(v);
  if (n === undefined) throw bad(`invalid value for ${name}: ${JSON.stringify(v)} (expected an integer: decimal digits, optionally signed, within 64 bits)`);
  return n;
}

/** A count or a number of seconds where upstream reads zero and below as "not set" (limit, timeoutSeconds). */
const positive = (n: number | undefined) => (n !== undefined && n > 0 ? n : undefined);

function oneOf<T extends string>(q: RawQuery, name: string, allowed: readonly T[]): T | undefined {
  const v = one(q, name);
  if (v === undefined || v === "") return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw bad(`invalid value for ${name}: ${JSON.stringify(v)} (supported: ${allowed.join(", ")})`);
  return v as T;
}

export function listParams(q: RawQuery): ListParams {
  return {
    watch: bool(q, "watch") ?? false,
    allowWatchBookmarks: bool(q, "allowWatchBookmarks") ?? false,
    continue: one(q, "continue") || undefined,
    fieldSelector: one(q, "fieldSelector") ?? "",
    labelSelector: one(q, "labelSelector") ?? "",
    limit: positive(int(q, "limit")),
    resourceVersion: one(q, "resourceVersion") || undefined,
    resourceVersionMatch: oneOf(q, "resourceVersionMatch", ["NotOlderThan", "Exact"] as const),
    sendInitialEvents: bool(q, "sendInitialEvents"),
    timeoutSeconds: positive(int(q, "timeoutSeconds")),
    includeObject: oneOf<IncludeObject>(q, "includeObject", ["None", "Metadata", "Object"]) ?? "Metadata",
  };
}

function dryRun(q: RawQuery): boolean {
  const v = q.dryRun;
  const values = (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((s) => s !== "");
  for (const s of values) if (s !== "All") throw bad(`invalid value for dryRun: ${JSON.stringify(s)} (supported: All)`);
  return values.length > 0;
}

export function writeParams(q: RawQuery): WriteParams {
  const fieldManager = one(q, "fieldManager") || undefined;
  if (fieldManager !== undefined && (fieldManager.length > 128 || /[^\x20-\x7e]/.test(fieldManager))) {
    throw bad("invalid value for fieldManager: must be at most 128 printable ASCII characters");
  }
  return {
    dryRun: dryRun(q),
    fieldManager,
    // Upstream's default for typed clients is Warn; an empty value means the default.
    fieldValidation: oneOf(q, "fieldValidation", ["Ignore", "Warn", "Strict"] as const) ?? "Warn",
    force: bool(q, "force") ?? false,
  };
}

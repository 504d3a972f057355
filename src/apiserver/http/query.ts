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

export function isPretty(q: RawQuery): boolean {
  const v = one(q, "pretty");
  return v !== undefined && v !== "false" && v !== "0";
}

function bool(q: RawQuery, name: string): boolean | undefined {
  const v = one(q, name);
  if (v === undefined) return undefined;
  if (v === "true" || v === "1" || v === "") return true;
  if (v === "false" || v === "0") return false;
  throw bad(`invalid value for ${name}: ${JSON.stringify(v)} (expected true or false)`);
}

/** Query parameter `name` as an integer (≥ `min` when given); absent or empty is undefined, anything else a 400. */
export function int(q: RawQuery, name: string, min?: number): number | undefined {
  const v = one(q, name);
  if (v === undefined || v === "") return undefined;
  if (!/^-?\d{1,15}$/.test(v) || (min !== undefined && Number(v) < min)) {
    throw bad(`invalid value for ${name}: ${JSON.stringify(v)} (expected an integer${min === undefined ? "" : ` ≥ ${min}`})`);
  }
  return Number(v);
}

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
    limit: int(q, "limit", 0),
    resourceVersion: one(q, "resourceVersion") || undefined,
    resourceVersionMatch: oneOf(q, "resourceVersionMatch", ["NotOlderThan", "Exact"] as const),
    sendInitialEvents: bool(q, "sendInitialEvents"),
    timeoutSeconds: int(q, "timeoutSeconds", 0),
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

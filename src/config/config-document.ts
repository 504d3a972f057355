// Reading one configuration document: YAML or JSON text, apiVersion/kind check, collected problems → one CONFIG_INVALID.
import { readFile } from "node:fs/promises";
import { LineCounter, parseDocument } from "yaml";
import { PlatformError, type ErrorCause } from "../errors.js";
import { YAML_READ, plainYamlValue } from "../plain-data.js";
import { describe, type ReadContext } from "./fields.js";

export interface ConfigLoadOptions {
  /** API group suffix of the apiVersion (default `platform.io`). */
  readonly groupSuffix?: string;
  /** Unknown fields are errors instead of warnings. */
  readonly strict?: boolean;
}

/** At most this many problems are spelled out in the message; all of them are in `causes`. */
const MESSAGE_PROBLEMS = 5;

export function configError(what: string, source: string, causes: readonly ErrorCause[]): PlatformError {
  const lines = causes.slice(0, MESSAGE_PROBLEMS).map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const more = causes.length > MESSAGE_PROBLEMS ? `; and ${causes.length - MESSAGE_PROBLEMS} more` : "";
  const head = causes.length === 1 ? "" : `${causes.length} problems: `;
  return new PlatformError("CONFIG_INVALID", `invalid ${what} ${source}: ${head}${lines.join("; ")}${more}`, { causes });
}

/** Parses YAML (JSON is YAML) into a mapping; duplicate keys and syntax errors name the line. */
export function parseConfigText(text: string, source: string, what: string): Record<string, unknown> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { ...YAML_READ, prettyErrors: false, uniqueKeys: true, lineCounter });
  const syntax = doc.errors[0];
  if (syntax) {
    const line = lineCounter.linePos(syntax.pos[0]).line;
    throw configError(what, source, [{ message: `${line ? `line ${line}: ` : ""}${syntax.message.split("\n")[0]}` }]);
  }
  let value: unknown;
  try {
    value = plainYamlValue(doc);
  } catch (err) {
    throw configError(what, source, [{ message: (err as Error).message }]);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw configError(what, source, [{ message: `expected a mapping with apiVersion and kind, got ${describe(value)}` }]);
  }
  return value as Record<string, unknown>;
}

/** apiVersion and kind must be exactly the expected ones. */
export function checkHeader(doc: Record<string, unknown>, expected: { apiVersion: string; kind: string }, ctx: ReadContext): void {
  for (const key of ["apiVersion", "kind"] as const) {
    if (doc[key] !== expected[key]) {
      ctx.errors.push({ field: key, message: `expected ${JSON.stringify(expected[key])}, got ${describe(doc[key])}`, reason: "FieldValueInvalid" });
    }
  }
}

/** Throws when the document had errors (or unknown fields under `strict`); otherwise returns the warnings. */
export function finish(ctx: ReadContext, options: ConfigLoadOptions, what: string, source: string): string[] {
  const unknown = ctx.unknown.map((u) => ({ field: u.path, message: u.hint ? `unknown field (${u.hint})` : "unknown field", reason: "FieldValueUnknown" }));
  const causes: ErrorCause[] = [...ctx.errors, ...(options.strict ? unknown : [])];
  if (causes.length > 0) throw configError(what, source, causes);
  return unknown.map((u) => `${u.field}: ${u.message}`);
}

export async function readConfigFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

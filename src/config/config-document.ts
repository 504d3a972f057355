// Reading one configuration document: YAML or JSON text, apiVersion/kind check, collected problems → one CONFIG_INVALID.
import { readFile } from "node:fs/promises";
import { LineCounter, parseDocument } from "yaml";
import { PlatformError, type ErrorCause } from "../errors.js";
import { YAML_READ, plainYamlValue } from "../plain-data.js";
import { documentError, fieldMessage, type FieldReader } from "../fields/reader.js";

export interface ConfigLoadOptions {
  /** API group suffix of the apiVersion (default `platform.io`). */
  readonly groupSuffix?: string;
  /** Unknown fields are errors instead of warnings. */
  readonly strict?: boolean;
}

export function configError(what: string, source: string, causes: readonly ErrorCause[]): PlatformError {
  return documentError("CONFIG_INVALID", `${what} ${source}`, causes);
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
    throw configError(what, source, [{ field: "", message: fieldMessage("", "a mapping with apiVersion and kind", value) }]);
  }
  return value as Record<string, unknown>;
}

/** apiVersion and kind must be exactly the expected ones (a kind served in several versions lists them all). */
export function checkHeader(doc: Record<string, unknown>, expected: { apiVersion: string | readonly string[]; kind: string }, r: FieldReader): void {
  const versions = [expected.apiVersion].flat();
  if (!versions.includes(doc.apiVersion as string)) r.problem("apiVersion", versions.length === 1 ? JSON.stringify(versions[0]) : `one of ${versions.map((v) => JSON.stringify(v)).join(", ")}`, doc.apiVersion);
  if (doc.kind !== expected.kind) r.problem("kind", JSON.stringify(expected.kind), doc.kind);
}

/** Throws when the document had errors (or unknown fields under `strict`); otherwise returns the unknown fields as warnings. */
export function finish(r: FieldReader, options: ConfigLoadOptions, what: string, source: string): string[] {
  r.throwIfInvalid("CONFIG_INVALID", what, source, { strict: options.strict ?? false });
  return r.unknown.map((u) => u.message);
}

export async function readConfigFile(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

// The -o flag: which printer (json, yaml, name, jsonpath…, go-template…) and how it renders objects and lists.
import { readFileSync } from "node:fs";
import { stringify as toYaml } from "yaml";
import type { ApiObject } from "../../../api/meta.js";
import { invalidOption, PlatformError } from "../../../errors.js";
import { parseCustomColumns, readCustomColumnsFile, type CustomColumn } from "./custom-columns.js";
import { GoTemplate } from "./go-template.js";
import { JsonPath } from "./jsonpath.js";
import { sortKeys } from "./sort-keys.js";

export type OutputSpec =
  | { readonly format: "default" | "wide" | "json" | "yaml" | "name" }
  | { readonly format: "jsonpath"; readonly template: JsonPath; readonly asJson: boolean }
  | { readonly format: "go-template"; readonly template: GoTemplate }
  /** get only: a table whose columns are JSONPaths into each object. */
  | { readonly format: "custom-columns"; readonly columns: readonly CustomColumn[] };

export interface PrintOptions {
  readonly allowMissingKeys: boolean;
  readonly showManagedFields: boolean;
}

/** Formats every printing command accepts; `wide`, `custom-columns` and `custom-columns-file` only where a table exists (get). */
export const OUTPUT_FORMATS: readonly string[] = [
  "go-template", "go-template-file", "json", "jsonpath", "jsonpath-as-json", "jsonpath-file", "name", "template", "templatefile", "yaml",
];

function readTemplateFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `error reading template file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

/**
 * Parses `-o` (and `--template`): `json`, `jsonpath={.a}`, `go-template-file=t.tmpl`, `template={{.a}}`, … .
 * An unknown format is a usage error naming the allowed ones.
 */
export function parseOutput(value: string | undefined, templateFlag?: string, extra: readonly string[] = []): OutputSpec {
  if (value === undefined || value === "") {
    if (templateFlag) return { format: "go-template", template: new GoTemplate(templateFlag) };
    return { format: "default" };
  }
  const eq = value.indexOf("=");
  const name = eq < 0 ? value : value.slice(0, eq);
  const arg = eq < 0 ? templateFlag : value.slice(eq + 1);
  const needArg = (): string => {
    if (arg === undefined || arg === "") throw invalidOption("--output", `${name}=TEMPLATE (or --template TEMPLATE)`, value);
    return arg;
  };
  switch (name) {
    case "json":
    case "yaml":
    case "name":
      return { format: name };
    case "wide":
      if (extra.includes("wide")) return { format: "wide" };
      break;
    case "custom-columns":
      if (extra.includes(name)) return { format: "custom-columns", columns: parseCustomColumns(arg ?? "") };
      break;
    case "custom-columns-file":
      if (extra.includes(name)) return { format: "custom-columns", columns: readCustomColumnsFile(needArg()) };
      break;
    case "jsonpath":
    case "jsonpath-as-json":
      return { format: "jsonpath", template: new JsonPath(needArg()), asJson: name === "jsonpath-as-json" };
    case "jsonpath-file":
      return { format: "jsonpath", template: new JsonPath(readTemplateFile(needArg())), asJson: false };
    case "go-template":
    case "template":
      return { format: "go-template", template: new GoTemplate(needArg()) };
    case "go-template-file":
    case "templatefile":
      return { format: "go-template", template: new GoTemplate(readTemplateFile(needArg())) };
  }
  throw invalidOption("--output", `to be one of ${[...OUTPUT_FORMATS, ...extra].sort().join(",")}`, value);
}

/** `certificatesigningrequest.certificates.platform.io/alice`, `serviceaccount/reader`: kubectl's name printer. */
export function qualifiedName(obj: Pick<ApiObject, "apiVersion" | "kind" | "metadata">): string {
  return `${resourceKind(obj)}/${obj.metadata?.name ?? ""}`;
}

/** `certificatesigningrequest.certificates.platform.io` (kind lower-cased, then the group when not core). */
export function resourceKind(obj: Pick<ApiObject, "apiVersion" | "kind">): string {
  const apiVersion = String(obj.apiVersion ?? "");
  const slash = apiVersion.indexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const kind = String(obj.kind ?? "").toLowerCase();
  return group ? `${kind}.${group}` : kind;
}

/** What `-o json` of several objects prints: a v1 List. */
export function asList(items: readonly ApiObject[]): ApiObject {
  return { apiVersion: "v1", kind: "List", metadata: { resourceVersion: "" }, items: [...items] } as unknown as ApiObject;
}

function withoutManagedFields(obj: unknown): unknown {
  if (typeof obj !== "object" || obj === null) return obj;
  const o = obj as { items?: unknown[]; metadata?: Record<string, unknown> };
  const copy: Record<string, unknown> = { ...(obj as Record<string, unknown>) };
  if (o.metadata && "managedFields" in o.metadata) {
    const { managedFields: _dropped, ...rest } = o.metadata;
    copy.metadata = rest;
  }
  if (Array.isArray(o.items)) copy.items = o.items.map(withoutManagedFields);
  return copy;
}

/** YAML as kubectl writes it: YAML 1.1 quoting (so `"yes"`, `"y"` and timestamps stay strings), no line folding. */
export function yamlText(value: unknown): string {
  return toYaml(value, { indentSeq: false, version: "1.1", lineWidth: 0 });
}

/** Renders one object (or a List) with a structured printer; the default/wide formats are the caller's job. */
export function printObject(spec: OutputSpec, obj: ApiObject, options: PrintOptions): string {
  switch (spec.format) {
    case "json":
    case "yaml": {
      const shown = sortKeys(options.showManagedFields ? obj : withoutManagedFields(obj));
      return spec.format === "json" ? `${JSON.stringify(shown, null, 4)}\n` : yamlText(shown);
    }
    case "name": {
      const items = Array.isArray((obj as { items?: unknown }).items) ? ((obj as unknown as { items: ApiObject[] }).items) : [obj];
      return items.map((item) => `${qualifiedName(item)}\n`).join("");
    }
    case "jsonpath":
      return spec.template.execute(obj, { allowMissingKeys: options.allowMissingKeys, asJson: spec.asJson });
    case "go-template":
      return spec.template.execute(obj, { allowMissingKeys: options.allowMissingKeys });
    default:
      throw new PlatformError("INTERNAL", `printObject cannot render the ${spec.format} format`);
  }
}

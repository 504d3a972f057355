// kubectl's `-o custom-columns=HEADER:PATH,…` (and `custom-columns-file=`) and `--sort-by=PATH`, on the JSONPath engine.
import { readFileSync } from "node:fs";
import { invalidOption, PlatformError } from "../../../errors.js";
import { goValue } from "./go-format.js";
import { JsonPath } from "./jsonpath.js";
import type { TableView } from "./table-printer.js";

export interface CustomColumn {
  readonly header: string;
  readonly path: JsonPath;
}

/** kubectl's relaxed paths: `a.b`, `.a.b`, `{a.b}` and `{.a.b}` all mean `{.a.b}`. */
export function relaxedJsonPath(expression: string, flag: string): JsonPath {
  const m = /^\{\.?([^{}]+)\}$|^\.?([^{}]+)$/.exec(expression);
  if (!m) throw invalidOption(flag, "to be a path like name1.name2, .name1.name2, {name1.name2} or {.name1.name2}", expression);
  return new JsonPath(`{.${m[1] ?? m[2]}}`);
}

/** `NAME:.metadata.name,SIGNER:.spec.signerName` */
export function parseCustomColumns(spec: string): CustomColumn[] {
  if (spec.trim() === "") throw invalidOption("--output", "to be custom-columns=<header>:<json-path-expr>[,…] (no custom columns given)", "custom-columns=");
  return spec.split(",").map((part) => {
    const colon = part.indexOf(":");
    if (colon <= 0) throw invalidOption("--output", "custom-columns entries to be <header>:<json-path-expr>", part);
    return { header: part.slice(0, colon), path: relaxedJsonPath(part.slice(colon + 1), "--output") };
  });
}

/** A custom-columns file: a line of headers, then a line of paths, both separated by white space. */
export function readCustomColumnsFile(path: string): CustomColumn[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `error reading custom-columns file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  const [headers = [], paths = []] = text.split("\n").filter((l) => l.trim() !== "").map((l) => l.trim().split(/\s+/));
  if (headers.length === 0 || headers.length !== paths.length) {
    throw new PlatformError("INVALID_ARGUMENT", `custom-columns file ${path} must hold a line of headers and a line of as many paths (${headers.length} headers, ${paths.length} paths)`);
  }
  return headers.map((header, i) => ({ header, path: relaxedJsonPath(paths[i]!, "--output") }));
}

/** One row per object: every value of a column's path (Go's %v, comma-separated), `<none>` when it has none. */
export function customColumnsView(columns: readonly CustomColumn[], objects: readonly unknown[]): TableView {
  const rows = objects.map((obj) =>
    columns.map(({ path }) => {
      const values = path.results(obj);
      if (values.length === 0 || values[0]!.length === 0) return "<none>";
      return values.flat().map(goValue).join(",");
    }),
  );
  return { headers: columns.map((c) => c.header), rows };
}

/** Go's tabwriter as kubectl sets it up (minimum width 6, padding 3); headers as given, the last column unpadded. */
export function renderColumns(view: TableView, noHeaders: boolean): string {
  const all = noHeaders ? view.rows : [view.headers, ...view.rows];
  if (all.length === 0) return "";
  const widths = view.headers.map((_, i) => Math.max(6, ...all.map((r) => (r[i] ?? "").length + 3)));
  return all.map((r) => `${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("")}\n`).join("");
}

// --- --sort-by ---

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;
const SUFFIX: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** The value of a resource quantity (`100m`, `2Gi`, `9`), else undefined. */
function quantity(s: string): number | undefined {
  const m = QUANTITY.exec(s);
  if (!m) return undefined;
  const suffix = m[2] ?? "";
  return Number(m[1]) * (SUFFIX[suffix] ?? (suffix ? 10 ** Number(suffix.slice(1)) : 1));
}

/** Strings as kubectl compares them: two quantities by value, anything else byte by byte. */
function compareStrings(a: string, b: string): number {
  const [qa, qb] = [quantity(a), quantity(b)];
  if (qa !== undefined && qb !== undefined) return qa - qb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareValues(a: unknown, b: unknown, template: string): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "string" && typeof b === "string") return compareStrings(a, b);
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  throw new PlatformError("INVALID_ARGUMENT", `cannot sort by ${template}: unsortable values ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
}

/**
 * Orders `items` by the first value of `path` in `objectOf(item)`, stably; items without the field come first, in
 * reverse order: kubectl's comparison calls such an item less than any other, another such one included, and Go's
 * insertion sort (what it uses for short lists) then reverses them. No item having the field at all is an error, as in
 * kubectl.
 */
export function sortByPath<T>(items: readonly T[], path: JsonPath, objectOf: (item: T) => unknown): T[] {
  const keyed = items.map((item) => ({ item, value: path.results(objectOf(item))[0] ?? [] }));
  if (keyed.length > 0 && keyed.every((k) => k.value.length === 0)) {
    throw new PlatformError("INVALID_ARGUMENT", `couldn't find any field with path ${JSON.stringify(path.template)} in the list of objects`);
  }
  const missing = keyed.filter((k) => k.value.length === 0).reverse();
  const present = keyed.filter((k) => k.value.length > 0).sort((x, y) => compareValues(x.value[0], y.value[0], path.template));
  return [...missing, ...present].map((k) => k.item);
}

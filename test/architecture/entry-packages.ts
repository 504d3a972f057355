// The npm packages an entry point loads: the import graph of test/architecture/layers.ts walked from one file.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { importSpecifiers, readImportGraph, type ImportGraph } from "./layers.js";

/** The package a bare specifier names: `@scope/name` or `name`. */
export const packageOf = (specifier: string): string => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");

/** Every repository file `entry` reaches through relative imports (static, `export … from`, `import()`), itself included. */
export function filesReachedFrom(graph: ImportGraph, entry: string): string[] {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    todo.push(...(graph.get(file) ?? []));
  }
  return [...seen].sort();
}

/** npm package → the first file (of those `entry` reaches) that imports it; node: builtins are left out. */
export function packagesLoadedBy(root: string, entry: string, graph: ImportGraph = readImportGraph(root)): Map<string, string> {
  const packages = new Map<string, string>();
  for (const file of filesReachedFrom(graph, entry)) {
    for (const spec of importSpecifiers(readFileSync(join(root, file), "utf8"))) {
      if (spec.startsWith(".") || spec.startsWith("node:")) continue;
      if (!packages.has(packageOf(spec))) packages.set(packageOf(spec), file);
    }
  }
  return new Map([...packages].sort(([a], [b]) => a.localeCompare(b)));
}

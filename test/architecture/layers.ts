// The import rules of docs/architecture.md as code: reads every import of src/ and signers/ and names each one that breaks them.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix, relative, sep } from "node:path";

/**
 * The parts of the product, lowest layer first. A file belongs to the longest entry its path starts with; an entry
 * ending in `/` is a folder, any other a single file. Keep in step with "What may import what" in docs/architecture.md.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["src/errors.ts", "src/plain-data.ts", "src/logger.ts", "src/version.ts", "src/compiled-script.ts", "src/process-metrics.ts", "src/accumulated-metrics.ts", "src/time/", "src/fields/"],
  ["src/api/", "src/pki/", "src/cel/"],
  ["signers/", "src/config/", "src/client/", "src/audit/", "src/tracing/"],
  ["src/controller/", "src/apiserver/", "src/devpki/"],
  ["src/cli/", "src/index.ts", "src/testing.ts", "src/testing/"],
];

/** Edges refused by name even where the layers alone would allow them (`from` → `to`, both part prefixes). */
export const FORBIDDEN: readonly { readonly from: string; readonly to: string }[] = [
  { from: "src/client/", to: "src/apiserver/" },
  { from: "src/config/", to: "src/controller/" },
  { from: "signers/", to: "src/apiserver/" },
  { from: "src/apiserver/bootstrap/", to: "src/devpki/" },
];

/** Repository-relative file → the repository-relative files it imports. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

export interface Part {
  readonly name: string;
  readonly layer: number;
}

/** The part (and its layer) of a repository-relative path, or undefined when no layer names it. */
export function partOf(file: string, layers: readonly (readonly string[])[] = LAYERS): Part | undefined {
  let best: Part | undefined;
  layers.forEach((entries, layer) => {
    for (const entry of entries) {
      const hit = entry.endsWith("/") ? file.startsWith(entry) : file === entry;
      if (hit && (best === undefined || entry.length > best.name.length)) best = { name: entry, layer };
    }
  });
  return best;
}

// `export` always has a `from` clause: a bare `export "x"` is text in a string (a message), not an import.
const STATIC_RE = /\b(?:import\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?|export\s+(?:type\s+)?[\w*{}\s,$]+?\s+from\s+)["']([^"']+)["']/g;
const DYNAMIC_RE = /\b(?:import|require)\s*\(\s*["']([^"']+)["']\s*\)/g;

/** Module specifiers of static imports, `export … from`, `import()` and `require()` in TypeScript source; comments are skipped. */
export function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return [...code.matchAll(STATIC_RE), ...code.matchAll(DYNAMIC_RE)].map((m) => m[1] as string);
}

/** Relative specifiers resolved to repository-relative `.ts` paths (`./x.js` → `dir/x.ts`); packages are left out. */
export function resolveImports(file: string, specifiers: readonly string[]): string[] {
  const out = new Set<string>();
  for (const spec of specifiers) {
    if (!spec.startsWith(".")) continue;
    const target = posix.normalize(posix.join(posix.dirname(file), spec));
    out.add(target.endsWith(".js") ? `${target.slice(0, -3)}.ts` : target);
  }
  return [...out];
}

function tsFiles(root: string, dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(join(root, dir)).sort()) {
    const rel = `${dir}/${name}`;
    if (statSync(join(root, rel)).isDirectory()) found.push(...tsFiles(root, rel));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) found.push(rel);
  }
  return found;
}

/** The import graph of every .ts file under `dirs` of the repository at `root`. */
export function readImportGraph(root: string, dirs: readonly string[] = ["src", "signers"]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const dir of dirs) {
    for (const file of tsFiles(root, dir)) {
      const rel = relative(root, join(root, file)).split(sep).join("/");
      graph.set(rel, resolveImports(rel, importSpecifiers(readFileSync(join(root, rel), "utf8"))));
    }
  }
  return graph;
}

/** One line per import that points up the layers, is forbidden by name, or leaves the layers: `file → imported file (why)`. */
export function layerViolations(graph: ImportGraph, layers = LAYERS, forbidden = FORBIDDEN): string[] {
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    const from = partOf(file, layers);
    if (!from) {
      problems.push(`${file} (in no layer: add its folder to LAYERS and to docs/architecture.md)`);
      continue;
    }
    for (const target of targets) {
      const to = partOf(target, layers);
      if (!to) problems.push(`${file} → ${target} (imports a file in no layer)`);
      else if (to.layer > from.layer) problems.push(`${file} → ${target} (L${from.layer} ${from.name} imports L${to.layer} ${to.name})`);
      const rule = forbidden.find((f) => file.startsWith(f.from) && target.startsWith(f.to));
      if (rule) problems.push(`${file} → ${target} (forbidden: ${rule.from} → ${rule.to})`);
    }
  }
  return problems;
}

/**
 * One cycle path per strongly connected group of parts (`src/a/ → src/b/ → src/a/`, with one file-level import per
 * step). The unit is the part of LAYERS (a top folder such as src/apiserver/, or an L0 file): the layers already keep
 * imports between layers one-way, so this catches two parts of one layer leaning on each other.
 */
export function folderCycles(graph: ImportGraph, layers = LAYERS): string[] {
  const folderOf = (file: string): string => partOf(file, layers)?.name ?? posix.dirname(file);
  const edges = new Map<string, Map<string, string>>();
  for (const [file, targets] of graph) {
    for (const target of targets) {
      const a = folderOf(file);
      const b = folderOf(target);
      if (a === b) continue;
      const out = edges.get(a) ?? new Map<string, string>();
      if (!out.has(b)) out.set(b, `${file} → ${target}`);
      edges.set(a, out);
    }
  }
  const cycles: string[] = [];
  const done = new Set<string>();
  for (const start of [...edges.keys()].sort()) {
    if (done.has(start)) continue;
    const path = shortestPath(edges, start, start);
    if (path) {
      path.forEach((f) => done.add(f));
      const steps = path.slice(0, -1).map((f, i) => edges.get(f)?.get(path[i + 1] as string));
      cycles.push(`${path.join(" → ")}  [${steps.join("; ")}]`);
    }
  }
  return cycles;
}

/** Breadth-first: the shortest folder path from `from` back to `to`, or undefined. */
function shortestPath(edges: ReadonlyMap<string, ReadonlyMap<string, string>>, from: string, to: string): string[] | undefined {
  const previous = new Map<string, string>();
  const queue = [from];
  while (queue.length > 0) {
    const at = queue.shift() as string;
    for (const next of edges.get(at)?.keys() ?? []) {
      if (next === to) {
        const path = [to, at];
        for (let p = at; p !== from; ) path.push((p = previous.get(p) as string));
        return path.reverse();
      }
      if (!previous.has(next) && next !== from) {
        previous.set(next, at);
        queue.push(next);
      }
    }
  }
  return undefined;
}

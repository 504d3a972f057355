// Fills dist/ of platform-ca-testing with the root build's files that dist/src/testing.js (and its .d.ts) reach, as they are.
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const rootDist = join(here, "../../dist");
const ENTRIES = ["src/testing.js", "src/testing.d.ts"];

// Static imports, `export … from` and `import("…")` of compiled JavaScript and declarations; only relative ones matter.
const SPECIFIER_RE = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;

/** Files under the root dist/ that `entries` reach through relative imports, entries included. */
export function reachedFiles(entries = ENTRIES) {
  const seen = new Set();
  const todo = [...entries];
  while (todo.length > 0) {
    const file = todo.pop();
    if (seen.has(file)) continue;
    const path = join(rootDist, file);
    if (!existsSync(path)) throw new Error(`platform-ca-testing: ${path} is missing; run \`npm run build\` at the repository root first`);
    seen.add(file);
    for (const [, spec] of readFileSync(path, "utf8").matchAll(SPECIFIER_RE)) {
      const target = posix.normalize(posix.join(posix.dirname(file), spec));
      // A declaration imports `./x.js` and means `./x.d.ts`.
      todo.push(file.endsWith(".d.ts") && target.endsWith(".js") ? `${target.slice(0, -3)}.d.ts` : target);
    }
  }
  return [...seen].sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = reachedFiles();
  rmSync(join(here, "dist"), { recursive: true, force: true });
  for (const file of files) {
    mkdirSync(dirname(join(here, "dist", file)), { recursive: true });
    copyFileSync(join(rootDist, file), join(here, "dist", file));
  }
  copyFileSync(join(here, "../../LICENSE"), join(here, "LICENSE"));
  console.log(`platform-ca-testing: ${files.length} files copied from dist/`);
}

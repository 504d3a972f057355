// Files of the installed package found from wherever a module runs: dist/ JavaScript for worker threads (also when
// the module runs from TypeScript sources, as tests do, or from the bundled `sign` command) and the native build.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { PlatformError } from "./errors.js";

/**
 * The package's root: the nearest directory above `start` with a package.json (dist/ has none, so a module in
 * src/, signers/, dist/… or the bundle finds the same root); undefined when there is none.
 */
export function findPackageRoot(start: string): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** This package's root, found once. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

/**
 * The compiled script at `path` from the package root, under dist/ (e.g. "src/pki/signing-pool-worker.js" is
 * dist/src/pki/signing-pool-worker.js); `what` names it in the error.
 */
export function compiledScript(path: string, what: string, root: string | undefined = PACKAGE_ROOT): URL {
  const file = root === undefined ? undefined : join(root, "dist", path);
  if (file !== undefined && existsSync(file)) return pathToFileURL(file);
  const where = file ?? `dist/${path} (no package.json above ${fileURLToPath(import.meta.url)})`;
  throw new PlatformError("NOT_READY", `${what} not found at ${where}; run npm run build`);
}

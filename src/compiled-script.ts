// Worker threads load JavaScript: the compiled sibling of a module, or dist/ when the module runs from TypeScript
// sources (tests run src/ and signers/ directly).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PlatformError } from "./errors.js";

/**
 * `file` next to the module at `moduleUrl`, else the same path under the dist/ of a directory above it (the project
 * root: src/pki/x.js is dist/src/pki/x.js, signers/x.js is dist/signers/x.js); `what` names it in the error.
 */
export function compiledScript(moduleUrl: string, file: string, what: string): URL {
  const sibling = new URL(`./${file}`, moduleUrl);
  if (existsSync(sibling)) return sibling;
  const path = sibling.pathname;
  for (let at = path.lastIndexOf("/", path.lastIndexOf("/") - 1); at > 0; at = path.lastIndexOf("/", at - 1)) {
    const built = new URL(`file://${path.slice(0, at)}/dist${path.slice(at)}`);
    if (existsSync(built)) return built;
  }
  throw new PlatformError("NOT_READY", `${what} not found next to ${fileURLToPath(moduleUrl)} nor in dist/; run npm run build`);
}

// Worker threads load JavaScript: the compiled sibling of a module, or dist/ when the module runs from TypeScript
// sources (tests run src/ directly).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PlatformError } from "./errors.js";

/** `file` next to the module at `moduleUrl`, else the same path under dist/; `what` names it in the error. */
export function compiledScript(moduleUrl: string, file: string, what: string): URL {
  const sibling = new URL(`./${file}`, moduleUrl);
  if (existsSync(sibling)) return sibling;
  const at = sibling.pathname.lastIndexOf("/src/");
  const built = at < 0 ? undefined : new URL(`file://${sibling.pathname.slice(0, at)}/dist${sibling.pathname.slice(at)}`);
  if (built !== undefined && existsSync(built)) return built;
  throw new PlatformError("NOT_READY", `${what} not found next to ${fileURLToPath(moduleUrl)} nor in dist/; run npm run build`);
}

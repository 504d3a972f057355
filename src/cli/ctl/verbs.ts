// The platformctl verbs, in the order `platformctl --help` lists them, each loaded only when a command line needs it.
import { modulesFor, type CommandModule, type LazyModules } from "../program.js";
import { firstOperand, type FlagTable } from "./argv.js";

const VERBS: LazyModules = [
  ["get", async () => (await import("./get.js")).getVerb],
  ["describe", async () => (await import("./describe.js")).describeVerb],
  ["create", async () => (await import("./create.js")).createVerb],
  ["apply", async () => (await import("./apply.js")).applyVerb],
  ["patch", async () => (await import("./patch.js")).patchVerb],
  ["delete", async () => (await import("./delete.js")).deleteVerb],
  ["certificate", async () => (await import("./certificate.js")).certificateVerb],
  ["auth", async () => (await import("./auth.js")).authVerb],
  ["api-resources", async () => (await import("./api-resources.js")).apiResourcesVerb],
  ["version", async () => (await import("./version.js")).versionVerb],
  ["completion", async () => (await import("../completion.js")).completionVerb],
  ["__complete", async () => (await import("./complete-names.js")).completeNamesVerb],
];

/** Verbs that read the whole tree: they always get every verb. */
const WHOLE_TREE = new Set(["completion", "__complete"]);

/** Every verb, in help order. */
export function allCtlVerbs(): Promise<CommandModule[]> {
  return modulesFor(VERBS, undefined, WHOLE_TREE);
}

/**
 * The verbs a command line needs: the one its first operand names (`platformctl -n x get csr` loads get alone), or
 * every verb for anything else (help, completion, an alias from the preferences file, a typo).
 */
export function ctlVerbsFor(args: readonly string[], rootFlags: FlagTable): Promise<CommandModule[]> {
  const at = firstOperand(args, rootFlags);
  return modulesFor(VERBS, at < 0 ? undefined : args[at], WHOLE_TREE);
}

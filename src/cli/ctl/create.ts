// `platformctl create -f`: creates every object of the files (or stdin), with dry-run, validation and -o.
import type { Command } from "commander";
import type { ApiObject } from "../../api/meta.js";
import { pathWithQuery } from "../../client/index.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { Failures } from "./failures.js";
import { addWriteFlags, checkFilenames, dryRunSuffix, outputOf, writeQuery, writeSettingsOf, type WriteFlags, type WriteSettings } from "./flags.js";
import { printObject, qualifiedName } from "./output/printer.js";
import { fileTargets, pathsFor, type Target } from "./targets.js";

/** POSTs a -f object into its collection (nothing is sent for a client dry run). */
export async function createObject(ctx: CtlContext, t: Target, obj: ApiObject, w: WriteSettings): Promise<ApiObject> {
  if (w.dryRun === "client") return obj;
  const client = await ctx.client();
  const body = t.namespace ? { ...obj, metadata: { ...obj.metadata, namespace: t.namespace } } : obj;
  return client.request<ApiObject>("POST", pathWithQuery(pathsFor(client, t.info).collectionPath(t.namespace), writeQuery(w)), body);
}

async function run(ctx: CtlContext, args: readonly string[], flags: WriteFlags): Promise<void> {
  const files = checkFilenames(flags, args);
  if (files.length === 0) throw new UsageError("must specify -f/--filename with the objects to create");
  const { spec, print } = outputOf(flags);
  const w = writeSettingsOf(flags, ctx.io);
  // Every object is created; the ones that could not be are reported at the end (exit 1).
  const failures = new Failures();
  for (const t of await fileTargets(ctx, files, flags.recursive === true)) {
    const created = await failures.attempt(() => createObject(ctx, t, t.object!, w));
    if (created) ctx.io.out(spec.format === "default" ? `${qualifiedName(created)} created${dryRunSuffix(w.dryRun)}\n` : printObject(spec, created, print));
  }
  failures.throwIfAny(ctx.io);
}

export const createVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("create")
    .description("create resources from files or stdin")
    .argument("[args...]");
  addWriteFlags(cmd, "platformctl-create", "holding the objects to create")
    .addHelpText("after", "\nExamples:\n  platformctl create -f csr.yaml\n  cat sa.yaml | platformctl create -f -\n  platformctl create -f manifests/ -R --dry-run=server -o name\n")
    .action((args: string[], flags: WriteFlags, self: Command) => withContext(self, (ctx) => run(ctx, args, flags)));
};

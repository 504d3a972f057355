// `platformctl delete`: named objects, the objects of -f files, or every object of a type matching -l / --all.
import type { Command } from "commander";
import type { ApiList } from "../../api/meta.js";
import { isPlatformError } from "../../errors.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { Failures } from "./failures.js";
import { addDryRunFlag, addFilenameFlags, checkFilenames, dryRunOf, dryRunSuffix, writeQuery, type FilenameFlags } from "./flags.js";
import { resourceKind } from "./output/printer.js";
import { apiVersionOf } from "./discovery.js";
import { objectPath, pathsFor, targetsOf, type Target } from "./targets.js";

interface DeleteFlags extends FilenameFlags {
  readonly dryRun?: string;
  readonly ignoreNotFound?: boolean;
  readonly selector?: string;
  readonly all?: boolean;
  readonly output?: string;
}

/** Every object of one type that -l (or --all) selects. */
async function selectedTargets(ctx: CtlContext, type: string, selector: string | undefined): Promise<Target[]> {
  const info = await (await ctx.discovery()).resolve(type);
  const client = await ctx.client();
  const namespace = info.namespaced ? await ctx.namespace() : undefined;
  const list = await client.request<ApiList>("GET", pathsFor(client, info).collectionPath(namespace), undefined, { query: { labelSelector: selector } });
  return list.items.map((o) => ({ info, name: o.metadata.name ?? "", ...(namespace ? { namespace } : {}) }));
}

async function run(ctx: CtlContext, args: readonly string[], flags: DeleteFlags): Promise<void> {
  const files = checkFilenames(flags, args);
  if (flags.output !== undefined && flags.output !== "name") throw new UsageError(`--output for delete must be "name", got ${JSON.stringify(flags.output)}`);
  const dryRun = dryRunOf(flags.dryRun, ctx.io);
  let targets: Target[];
  if (files.length === 0 && (flags.selector !== undefined || flags.all)) {
    if (args.length !== 1) throw new UsageError("with -l or --all, name exactly one resource type and no object names");
    targets = await selectedTargets(ctx, args[0]!, flags.selector);
    if (targets.length === 0) ctx.io.err("No resources found\n");
  } else targets = await targetsOf(ctx, args, files, flags.recursive === true, "delete");
  const client = await ctx.client();
  // Every object is tried; the ones that could not be deleted are reported at the end (exit 1).
  const failures = new Failures();
  for (const t of targets) {
    await failures.attempt(async () => {
      if (dryRun !== "client") {
        try {
          await client.request("DELETE", objectPath(client, t, undefined, writeQuery({ dryRun })));
        } catch (err) {
          if (flags.ignoreNotFound && isPlatformError(err, "NOT_FOUND")) return;
          throw err;
        }
      }
      const kind = resourceKind({ apiVersion: apiVersionOf(t.info), kind: t.info.kind });
      ctx.io.out(flags.output === "name" ? `${kind}/${t.name}\n` : `${kind} "${t.name}" deleted${dryRunSuffix(dryRun)}\n`);
    });
  }
  failures.throwIfAny(ctx.io);
}

export const deleteVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("delete")
    .description("delete resources by file, by type and name, or by type and label selector")
    .argument("[resource...]", "TYPE NAME… or TYPE/NAME…")
    .option("-l, --selector <selector>", "delete every object of the type matching this label selector")
    .option("--all", "delete every object of the type in the namespace")
    .option("--ignore-not-found", "treat a missing object as deleted")
    .option("-o, --output <format>", "name: print only kind/name");
  addFilenameFlags(cmd, "naming the objects to delete");
  addDryRunFlag(cmd);
  cmd
    .addHelpText("after", "\nExamples:\n  platformctl delete csr alice\n  platformctl delete -f sa.yaml\n  platformctl delete sa -l team=a\n")
    .action((args: string[], flags: DeleteFlags, self: Command) => withContext(self, (ctx) => run(ctx, args, flags)));
};

// `platformctl api-resources`: the resource types the server serves, from discovery (and its cache).
import type { Command } from "commander";
import type { CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { apiVersionOf, groupResource } from "./discovery.js";
import { UsageError } from "../program.js";
import { renderTable } from "./output/table-printer.js";

interface ApiResourcesFlags {
  readonly output?: string;
  readonly headers?: boolean;
  readonly namespaced?: string;
  readonly apiGroup?: string;
  readonly verbs?: string;
}

async function run(ctx: CtlContext, flags: ApiResourcesFlags): Promise<void> {
  if (flags.output !== undefined && flags.output !== "wide" && flags.output !== "name") throw new UsageError(`--output must be wide or name, got ${JSON.stringify(flags.output)}`);
  const wantVerbs = (flags.verbs ?? "").split(",").filter(Boolean);
  const resources = (await (await ctx.discovery()).all())
    // Each resource once, in its preferred version (the list has preferred versions first).
    .filter((r, i, all) => all.findIndex((o) => o.group === r.group && o.plural === r.plural) === i)
    .filter((r) => flags.namespaced === undefined || String(r.namespaced) === flags.namespaced)
    .filter((r) => flags.apiGroup === undefined || r.group === flags.apiGroup)
    .filter((r) => wantVerbs.every((v) => r.verbs.includes(v)))
    .sort((a, b) => a.group.localeCompare(b.group) || a.plural.localeCompare(b.plural));
  if (flags.output === "name") {
    ctx.io.out(resources.map((r) => `${groupResource(r)}\n`).join(""));
    return;
  }
  const wide = flags.output === "wide";
  const headers = ["Name", "ShortNames", "ApiVersion", "Namespaced", "Kind", ...(wide ? ["Verbs", "Categories"] : [])].map((h) => h.toUpperCase());
  const rows = resources.map((r) => [
    r.plural, r.shortNames.join(","), apiVersionOf(r), String(r.namespaced), r.kind,
    ...(wide ? [`[${r.verbs.join(" ")}]`, r.categories.join(",")] : []),
  ]);
  ctx.io.out(renderTable({ headers, rows }, flags.headers === false));
}

export const apiResourcesVerb: CommandModule = (program: Command) => {
  program
    .command("api-resources")
    .description("print the supported API resources on the server")
    .option("-o, --output <format>", "wide or name")
    .option("--no-headers", "print no column headers")
    .option("--namespaced <bool>", "true: only namespaced resources; false: only cluster-scoped ones")
    .option("--api-group <group>", "only resources of this API group (\"\" for core)")
    .option("--verbs <list>", "only resources supporting these verbs (comma-separated)")
    .addHelpText("after", "\nExamples:\n  platformctl api-resources\n  platformctl api-resources --api-group certificates.platform.io -o wide\n")
    .action((flags: ApiResourcesFlags, self: Command) => withContext(self, (ctx) => run(ctx, flags)));
};

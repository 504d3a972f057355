// `platformctl auth whoami`: the identity the server sees for these credentials (SelfSubjectReview), impersonation included.
import type { Command } from "commander";
import type { ApiObject, UserInfo } from "../../api/meta.js";
import type { CommandModule } from "../program.js";
import { formatTable } from "../table.js";
import { withContext, type CtlContext } from "./context.js";
import { addOutputFlags, outputOf, type OutputFlags } from "./flags.js";
import { printObject } from "./output/printer.js";

/** The attribute table kubectl prints: username, UID, groups and each extra key. */
export function whoamiTable(user: UserInfo): string {
  const rows: string[][] = [["Username", user.username ?? ""]];
  if (user.uid) rows.push(["UID", user.uid]);
  if (user.groups?.length) rows.push(["Groups", `[${user.groups.join(" ")}]`]);
  for (const [key, values] of Object.entries(user.extra ?? {}).sort(([a], [b]) => a.localeCompare(b))) rows.push([`Extra: ${key}`, `[${values.join(" ")}]`]);
  return formatTable(["Attribute", "Value"], rows);
}

async function run(ctx: CtlContext, flags: OutputFlags): Promise<void> {
  const { spec, print } = outputOf(flags);
  const client = await ctx.client();
  const body = { apiVersion: `${ctx.names.authentication}/v1`, kind: "SelfSubjectReview", metadata: {} };
  const review = await client.request<ApiObject & { status?: { userInfo?: UserInfo } }>("POST", `/apis/${ctx.names.authentication}/v1/selfsubjectreviews`, body);
  ctx.io.out(spec.format === "default" ? whoamiTable(review.status?.userInfo ?? { username: "" }) : printObject(spec, review, print));
}

export const authVerb: CommandModule = (program: Command) => {
  const auth = program.command("auth").description("inspect authentication");
  const whoami = auth.command("whoami").description("show the user attributes the server holds for the current credentials");
  addOutputFlags(whoami, "json|yaml|jsonpath=…|go-template=…");
  whoami
    .addHelpText("after", "\nExamples:\n  platformctl auth whoami\n  platformctl auth whoami --as alice --as-group devs -o yaml\n")
    .action((flags: OutputFlags, self: Command) => withContext(self, (ctx) => run(ctx, flags)));
};

// `platformctl version`: the client version and, unless --client, the server's (from /version).
import type { Command } from "commander";
import { PlatformError } from "../../errors.js";
import type { CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { yamlText } from "./output/printer.js";

interface VersionFlags {
  readonly client?: boolean;
  readonly output?: string;
}

/** The client version as `--version=raw` and `version -o json` print it. */
export function versionInfo(version: string) {
  const [major = "0", minor = "0"] = version.replace(/^v/, "").split(".");
  return { major, minor, gitVersion: version, platform: `${process.platform}/${process.arch}`, nodeVersion: process.version };
}

async function run(ctx: CtlContext, flags: VersionFlags): Promise<void> {
  if (flags.output !== undefined && flags.output !== "json" && flags.output !== "yaml") {
    throw new PlatformError("INVALID_OPTION", `--output must be 'yaml' or 'json', got ${JSON.stringify(flags.output)}`);
  }
  const result: { clientVersion: ReturnType<typeof versionInfo>; serverVersion?: Record<string, unknown> } = { clientVersion: versionInfo(ctx.clientVersion) };
  let failure: unknown;
  if (!flags.client) {
    try {
      result.serverVersion = await (await ctx.client()).request<Record<string, unknown>>("GET", "/version");
    } catch (err) {
      failure = err;
    }
  }
  if (flags.output === "json") ctx.io.out(`${JSON.stringify(result, null, 2)}\n`);
  else if (flags.output === "yaml") ctx.io.out(yamlText(result));
  else {
    ctx.io.out(`Client Version: ${result.clientVersion.gitVersion}\n`);
    const s = result.serverVersion;
    if (s) ctx.io.out(`Server Version: ${String(s.gitVersion ?? "")}${s.platformCaVersion ? ` (platform-ca v${String(s.platformCaVersion)})` : ""}\n`);
  }
  // As kubectl: the client version still prints when the server cannot be reached.
  if (failure) throw failure;
}

export const versionVerb: CommandModule = (program: Command) => {
  program
    .command("version")
    .description("print the client and server versions")
    .option("--client", "only the client version, without contacting the server")
    .option("-o, --output <format>", "json or yaml")
    .addHelpText("after", "\nExamples:\n  platformctl version\n  platformctl version --client -o json\n")
    .action((flags: VersionFlags, self: Command) => withContext(self, (ctx) => run(ctx, flags)));
};

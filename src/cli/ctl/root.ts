// The platformctl command tree: verbs, inherited options everywhere, --version, --profile and the preferences file.
import { Command, CommanderError } from "commander";
import { invalidOption } from "../../errors.js";
import { VERSION } from "../../version.js";
import { runProgram, UsageError, type CommandModule } from "../program.js";
import { flagTable, normalizeArgv } from "./argv.js";
import { addGlobalOptions, globalFlags } from "./global-options.js";
import { applyPreferences, loadPreferences, preferencesPath } from "./preferences.js";
import { parseProfileKind, startProfile, type RunningProfile } from "./profile.js";
import { versionInfo } from "./version.js";

export interface CtlRunOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
}

function descendants(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...descendants(c)]);
}

/** `--platformrc PATH` or `--platformrc=PATH`, read before parsing because the file rewrites the arguments. */
function platformrcFlag(args: readonly string[]): string | undefined {
  const at = args.indexOf("--platformrc");
  if (at >= 0) return args[at + 1];
  return args.find((a) => a.startsWith("--platformrc="))?.slice("--platformrc=".length);
}

/** The version lines of `--version` / `--version=raw`. */
function versionText(mode: string, version: string): string {
  if (mode === "raw") return `${JSON.stringify(versionInfo(version), null, 2)}\n`;
  return `Client Version: ${version}\n`;
}

/** Builds the tree; `onProfile` receives the profile started before the action runs. */
export function buildCtlProgram(modules: readonly CommandModule[], onProfile: (p: RunningProfile) => void): Command {
  const program = new Command("platformctl")
    .description("platformctl talks to the platform API server: get, describe, create, apply, patch, delete, and certificates")
    .argument("[command...]")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .addHelpCommand(false)
    .addHelpText("after", "\nExamples:\n  platformctl --platformconfig .platform/admin.conf get csr\n  platformctl certificate approve alice\n  platformctl get csr alice -o jsonpath='{.status.certificate}' | base64 -d\n");
  addGlobalOptions(program, false);
  for (const add of modules) add(program);
  for (const cmd of descendants(program)) addGlobalOptions(cmd.exitOverride(), true);
  program.hook("preAction", async (_root, action) => {
    const flags = globalFlags(action);
    const mode = flags.version;
    if (mode !== undefined) {
      if (mode === "true" || mode === "raw") {
        process.stdout.write(versionText(mode, `v${VERSION}`));
        throw new CommanderError(0, "commander.version", "version printed");
      }
      if (!/^v\d+\.\d+\.\d+\S*$/.test(mode)) throw invalidOption("--version", "to be true, raw or a version like v1.2.3", mode);
    }
    const kind = parseProfileKind(flags.profile);
    onProfile(await startProfile(kind, flags.profileOutput));
  });
  program.action((words: string[]) => {
    if (words.length > 0) throw new UsageError(`unknown command "${words[0]}" for "platformctl"`);
    program.outputHelp();
  });
  return program;
}

/** Runs platformctl on `argv` (node, script, ...args): preferences, argument normalisation, then the command. */
export async function runCtl(modules: readonly CommandModule[], argv: readonly string[], options: CtlRunOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  let profile: RunningProfile | undefined;
  const program = buildCtlProgram(modules, (p) => (profile = p));
  const flags = flagTable(program);
  let args = argv.slice(2);
  try {
    args = applyPreferences(args, loadPreferences(preferencesPath(platformrcFlag(args), env)), program, flags);
  } catch (err) {
    // A broken preferences file is reported like any other failure.
    return runProgram(new Command().exitOverride().action(() => Promise.reject(err)), ["node", "platformctl"]);
  }
  const code = await runProgram(program, [...argv.slice(0, 2), ...normalizeArgv(args, flags)]);
  if (profile) {
    try {
      await profile.stop();
    } catch (err) {
      process.stderr.write(`error: ${(err as Error).message}\n`);
      return code === 0 ? 1 : code;
    }
  }
  return code;
}

// Builds the `platform-ca` command tree: each subcommand lives in src/cli/commands/ and registers itself here.
import { Command, CommanderError } from "commander";
import { isPlatformError } from "../errors.js";

/** A subcommand module: adds its commands to the root program. */
export type CommandModule = (program: Command) => void;

/** Exit codes: 0 ok, 1 refused or failed, 2 usage error. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {
  override name = "UsageError";
}

export function buildProgram(name: string, version: string, modules: readonly CommandModule[]): Command {
  const program = new Command(name).version(version).showHelpAfterError("(run with --help for usage)");
  program.exitOverride();
  // Options belong to the command they follow: `dev-certs issue … --out D` is issue's --out, not dev-certs'.
  program.enablePositionalOptions();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  for (const add of modules) add(program);
  return program;
}

/** Runs the program, mapping every failure to one clear line on stderr and an exit code; never a stack trace. */
export async function runProgram(program: Command, argv: readonly string[]): Promise<number> {
  try {
    await program.parseAsync(argv as string[]);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return 0;
      return EXIT_USAGE;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (isPlatformError(err)) {
      process.stderr.write(`error: ${err.message}\n`);
      // Several problems are listed one per line; a single one is listed only when the message does not say it.
      const said = err.causes.length === 1 && err.message.includes(err.causes[0]!.message);
      if (!said) for (const c of err.causes) process.stderr.write(`  ${c.field ? `${c.field}: ` : ""}${c.message}\n`);
      return err.code === "INVALID_OPTION" ? EXIT_USAGE : EXIT_FAILURE;
    }
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`error: ${message}\n`);
    if (process.env.PLATFORM_DEBUG) console.error(err);
    return EXIT_FAILURE;
  }
}

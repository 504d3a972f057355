// Builds the `platform-ca` command tree: each subcommand lives in src/cli/commands/ and registers itself here.
import { Command, CommanderError } from "commander";
import { isPlatformError, type ErrorCause } from "../errors.js";
import { groupNames, type GroupNames } from "../api/group.js";

/** A subcommand module: adds its commands to the root program. */
export type CommandModule = (program: Command) => void;

/** Command modules by the command each adds, loaded on demand (in the order help lists them). */
export type LazyModules = readonly (readonly [string, () => Promise<CommandModule>])[];

/**
 * The module the command word names, alone; every module when the word names none or a command that reads the whole
 * tree (`wholeTree`: completion), so help, completion and suggestions for typos see every command.
 */
export async function modulesFor(modules: LazyModules, word: string | undefined, wholeTree: ReadonlySet<string>): Promise<CommandModule[]> {
  const named = word === undefined || wholeTree.has(word) ? undefined : modules.find(([name]) => name === word);
  return Promise.all((named ? [named] : modules).map(([, load]) => load()));
}

/** Exit codes: 0 ok, 1 refused or failed, 2 usage error. */
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export class UsageError extends Error {
  override name = "UsageError";
}

/** The names of a `--group-suffix`: an invalid one is a usage error (one line, exit 2) with groupNames' reason. */
export function groupNamesFlag(suffix: string | undefined): GroupNames {
  try {
    return groupNames(suffix);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Ends a command with `code` and nothing more on stderr: an answer, not a failure (`auth can-i` says "no" with 1). */
export class ExitStatus extends Error {
  override name = "ExitStatus";
  constructor(readonly code: number) {
    super(`exit status ${code}`);
  }
}

/**
 * `platformctl … | head` closes the pipe before everything is written: end quietly, as a Unix tool does on SIGPIPE,
 * instead of an unhandled EPIPE and a stack trace on the terminal.
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(typeof process.exitCode === "number" ? process.exitCode : 0);
      throw err;
    });
  }
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

/**
 * The lines printed for a failure: `error: <message>`, then one indented line per cause — several problems one per
 * line; a single one only when the message does not already say it.
 */
export function errorText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  let text = `error: ${message}\n`;
  if (isPlatformError(err)) {
    const said = err.causes.length === 1 && message.includes(err.causes[0]!.message);
    // A field error names its field in its message (expected `spec.x` …); others get the field in front.
    const line = (c: ErrorCause) => (c.field && !c.message.includes(`\`${c.field}\``) ? `${c.field}: ${c.message}` : c.message);
    if (!said) for (const c of err.causes) text += `  ${line(c)}\n`;
  }
  return text;
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
    if (err instanceof ExitStatus) return err.code;
    process.stderr.write(errorText(err));
    if (err instanceof UsageError) return EXIT_USAGE;
    if (isPlatformError(err)) return err.code === "INVALID_OPTION" ? EXIT_USAGE : EXIT_FAILURE;
    if (process.env.PLATFORM_DEBUG) console.error(err);
    return EXIT_FAILURE;
  }
}

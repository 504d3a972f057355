// The log flags of the long-running commands (up, apiserver, controller): --log-format, --log-level and -v.
import { Option, type Command } from "commander";
import { LOG_FORMATS, LOG_LEVELS, logOutput, setLogOutput, type LogFormat } from "../logger.js";
import { UsageError } from "./program.js";

export interface LogFlags {
  readonly logFormat?: LogFormat;
  readonly logLevel?: string;
  readonly v?: number;
}

/**
 * The pino level of a klog verbosity, as upstream components read `-v`: V(0)–V(3) are the steady-state messages an
 * operator keeps (info), V(4) is debug, V(5) and above trace.
 */
export function levelOfVerbosity(v: number): "info" | "debug" | "trace" {
  return v >= 5 ? "trace" : v >= 4 ? "debug" : "info";
}

function verbosity(text: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`expected \`-v\` to be a whole number (e.g. -v 4 for debug), got ${JSON.stringify(text)}`);
  return Number(text);
}

export function addLogOptions(command: Command): Command {
  return command
    .addOption(new Option("--log-format <format>", "text (coloured lines for people) or json (one object a line); json when stderr is not a terminal").choices(LOG_FORMATS))
    .addOption(new Option("--log-level <level>", "least severe level logged (default info, or PLATFORM_LOG_LEVEL)").choices(LOG_LEVELS))
    .addOption(new Option("-v, --v <N>", "log verbosity as upstream components count it: 0-3 info, 4 debug, 5 and above trace").argParser(verbosity));
}

/** Applies the flags to every logger the process creates from now on (its threads get them from logOutput()). */
export function applyLogFlags(flags: LogFlags): void {
  if (flags.logLevel !== undefined && flags.v !== undefined) throw new UsageError("give either --log-level or -v, not both");
  const level = flags.logLevel ?? (flags.v !== undefined ? levelOfVerbosity(flags.v) : undefined);
  const env = level === undefined ? logOutput().level : undefined;
  if (env !== undefined && !(LOG_LEVELS as readonly string[]).includes(env)) {
    throw new UsageError(`PLATFORM_LOG_LEVEL=${env} is not a level: use one of ${LOG_LEVELS.join(", ")} (or --log-level, -v)`);
  }
  setLogOutput({ ...(flags.logFormat && { format: flags.logFormat }), ...(level && { level }) });
}

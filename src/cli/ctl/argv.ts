// Brings kubectl-style (pflag) arguments into the shape commander parses: bare flags with a default value, --bool=false.
import type { Command } from "commander";

/**
 * Flags whose bare form means a value (pflag's NoOptDefVal): a value must then be attached with `=`, so
 * `--dry-run server` leaves `server` as an argument, exactly as kubectl reads it.
 */
export const BARE_FLAG_VALUES: Readonly<Record<string, string>> = {
  "--dry-run": "unchanged",
  "--validate": "strict",
  "--version": "true",
};

export interface FlagTable {
  /** Long boolean flags (`--local`). */
  readonly booleans: ReadonlySet<string>;
  /** Boolean flags that default to true and have a `--no-` form (`--allow-missing-template-keys`). */
  readonly negatable: ReadonlySet<string>;
  /** Long and short flags that take a value (`--namespace`, `-n`). */
  readonly valued: ReadonlySet<string>;
}

/** Every flag of the program tree, by kind. */
export function flagTable(program: Command): FlagTable {
  const booleans = new Set<string>();
  const negatable = new Set<string>();
  const valued = new Set<string>();
  const walk = (cmd: Command): void => {
    for (const opt of cmd.options) {
      if (!opt.long) continue;
      if (opt.negate) negatable.add(`--${opt.long.slice(5)}`);
      else if (opt.required || opt.optional) {
        valued.add(opt.long);
        if (opt.short) valued.add(opt.short);
      } else booleans.add(opt.long);
    }
    cmd.commands.forEach(walk);
  };
  walk(program);
  return { booleans, negatable, valued };
}

/** Rewrites bare NoOptDefVal flags and `--flag=true|false` of booleans; everything after `--` stays as it is. */
export function normalizeArgv(args: readonly string[], flags: FlagTable): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const bare = BARE_FLAG_VALUES[arg];
    if (bare !== undefined) {
      out.push(`${arg}=${bare}`);
      continue;
    }
    const m = /^(--[^=]+)=(true|false)$/i.exec(arg);
    if (m && (flags.booleans.has(m[1]!) || flags.negatable.has(m[1]!))) {
      const on = m[2]!.toLowerCase() === "true";
      if (on) out.push(m[1]!);
      else if (flags.negatable.has(m[1]!)) out.push(`--no-${m[1]!.slice(2)}`);
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** Index of the first argument that is not an option or an option's value (the command name), or -1. */
export function firstOperand(args: readonly string[], flags: FlagTable, from = 0): number {
  for (let i = from; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") return -1;
    if (!arg.startsWith("-") || arg === "-") return i;
    if (!arg.includes("=") && flags.valued.has(arg)) i++;
  }
  return -1;
}

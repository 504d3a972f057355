// The platformctl preferences file (--platformrc, PLATFORMRC): per-command option defaults and command aliases.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { parsePlainYaml } from "../../plain-data.js";
import { PlatformError } from "../../errors.js";
import { FieldReader } from "../../fields/reader.js";
import { firstOperand, type FlagTable } from "./argv.js";

export const PREFERENCES_ENV = "PLATFORMRC";

export interface OptionDefault {
  readonly name: string;
  readonly default: string;
}

export interface Preferences {
  readonly defaults: readonly { readonly command: string; readonly options: readonly OptionDefault[] }[];
  readonly aliases: readonly {
    readonly name: string;
    readonly command: string;
    readonly prependArgs: readonly string[];
    readonly appendArgs: readonly string[];
    readonly options: readonly OptionDefault[];
  }[];
}

/** The file to read: --platformrc, else PLATFORMRC, else ~/.platform/platformrc; none when PLATFORMRC=off. */
export function preferencesPath(flag: string | undefined, env: Readonly<Record<string, string | undefined>>): { path: string; explicit: boolean } | undefined {
  const fromEnv = env[PREFERENCES_ENV];
  if (fromEnv === "off" || flag === "off") return undefined;
  if (flag) return { path: flag, explicit: true };
  if (fromEnv) return { path: fromEnv, explicit: true };
  return { path: join(env.HOME ?? homedir(), ".platform", "platformrc"), explicit: false };
}

/** Reads and checks a preferences file; a missing default file is no preferences. */
export function loadPreferences(location: { path: string; explicit: boolean } | undefined): Preferences | undefined {
  if (!location) return undefined;
  let text: string;
  try {
    text = readFileSync(location.path, "utf8");
  } catch (err) {
    if (!location.explicit && (err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new PlatformError("CONFIG_INVALID", `preferences ${location.path}: cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  return parsePreferences(text, location.path);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function parsePreferences(text: string, source: string): Preferences {
  let doc: unknown;
  try {
    doc = parsePlainYaml(text);
  } catch (err) {
    throw new PlatformError("CONFIG_INVALID", `preferences ${source}: not valid YAML: ${(err as Error).message}`, { cause: err });
  }
  if (!isObject(doc) || doc.kind !== "Preference") {
    throw new PlatformError("CONFIG_INVALID", `preferences ${source}: expected a document with kind: Preference`);
  }
  const r = new FieldReader();
  // An empty value (`defaults:`) is refused here rather than read as absent: the file names what it changes.
  const list = <T>(v: unknown, field: string, item: (v: unknown, at: string) => T | undefined): T[] =>
    v === null ? (r.problem(field, "a list", v) ?? []) : r.list(v, field, item);
  const strings = (v: unknown, field: string): string[] => list(v, field, (s, at) => (typeof s === "string" ? s : r.problem(at, "a string", s)));
  const options = (v: unknown, field: string): OptionDefault[] =>
    list(v, field, (o, at) => {
      const name = isObject(o) && typeof o.name === "string" && o.name !== "" ? o.name : undefined;
      const value = isObject(o) && ["string", "boolean", "number"].includes(typeof o.default) ? o.default : undefined;
      if (name === undefined || value === undefined) return r.problem(at, "a name and a default (a string, boolean or number)", o);
      return { name: name.replace(/^--/, ""), default: String(value) };
    });
  const defaults = list(doc.defaults, "defaults", (d, at) => {
    if (!isObject(d) || typeof d.command !== "string") return r.problem(`${at}.command`, "a command such as get", isObject(d) ? d.command : undefined);
    return { command: d.command.trim(), options: options(d.options, `${at}.options`) };
  });
  const aliases = list(doc.aliases, "aliases", (a, at) => {
    if (!isObject(a) || typeof a.name !== "string" || typeof a.command !== "string") return r.problem(at, "a name and a command", a);
    return {
      name: a.name,
      command: a.command.trim(),
      prependArgs: strings(a.prependArgs, `${at}.prependArgs`),
      appendArgs: strings(a.appendArgs, `${at}.appendArgs`),
      options: options(a.options, `${at}.options`),
    };
  });
  r.throwIfInvalid("CONFIG_INVALID", "preferences", source);
  return { defaults, aliases };
}

const given = (args: readonly string[], name: string, short?: string): boolean =>
  args.some((a) => a === `--${name}` || a.startsWith(`--${name}=`) || a === `--no-${name}` || (short !== undefined && (a === short || a.startsWith(short))));

/** Expands an alias and adds each default option the command line does not set itself. */
export function applyPreferences(args: readonly string[], prefs: Preferences | undefined, program: Command, flags: FlagTable): string[] {
  if (!prefs) return [...args];
  let out = [...args];
  const at = firstOperand(out, flags);
  if (at < 0) return out;
  const alias = prefs.aliases.find((a) => a.name === out[at]);
  let aliasOptions: readonly OptionDefault[] = [];
  if (alias && !program.commands.some((c) => c.name() === alias.name || c.aliases().includes(alias.name))) {
    const dash = out.indexOf("--");
    const tail = dash < 0 ? out.slice(at + 1) : out.slice(at + 1, dash);
    const literal = dash < 0 ? [] : out.slice(dash);
    out = [...out.slice(0, at), ...alias.command.split(/\s+/), ...alias.prependArgs, ...tail, ...alias.appendArgs, ...literal];
    aliasOptions = alias.options;
  }
  // Walk down the command tree along the operands: `certificate approve` is one command path.
  let cmd: Command | undefined = program;
  let end = at;
  const path: string[] = [];
  for (let i = at; i >= 0 && cmd; i = firstOperand(out, flags, i + 1)) {
    const sub: Command | undefined = cmd.commands.find((c) => c.name() === out[i] || c.aliases().includes(out[i]!));
    if (!sub) break;
    path.push(sub.name());
    cmd = sub;
    end = i;
  }
  const wanted = [...aliasOptions, ...(prefs.defaults.find((d) => d.command === path.join(" "))?.options ?? [])];
  const added: string[] = [];
  for (const o of wanted) {
    const short = cmd?.options.find((opt) => opt.long === `--${o.name}`)?.short;
    if (!given([...out, ...added], o.name, short)) added.push(`--${o.name}=${o.default}`);
  }
  return [...out.slice(0, end + 1), ...added, ...out.slice(end + 1)];
}

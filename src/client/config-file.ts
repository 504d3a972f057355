// Finds and loads the client config file(s): --platformconfig, else $PLATFORMCONFIG (merged), else ~/.platform/config.
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { PlatformError } from "../errors.js";
import { parseConfigFile, type ClusterEntry, type ContextEntry, type ParsedConfigFile, type UserEntry } from "./config-parse.js";

export type { ClusterEntry, ContextEntry, UserEntry } from "./config-parse.js";

export const CONFIG_ENV = "PLATFORMCONFIG";
export const DEFAULT_CONFIG_PATH = [".platform", "config"] as const;

/** The merged view of every file read: per name, the first file that defines it wins. */
export interface ClientConfig {
  readonly clusters: ReadonlyMap<string, ClusterEntry>;
  readonly users: ReadonlyMap<string, UserEntry>;
  readonly contexts: ReadonlyMap<string, ContextEntry>;
  readonly currentContext?: string;
  /** The files read, in precedence order (for messages). */
  readonly files: readonly string[];
}

export interface ConfigLocation {
  /** `--platformconfig`: the only file read; it must exist. */
  readonly explicitPath?: string;
  /** Environment to read PLATFORMCONFIG and HOME from (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Base of relative paths given by flag or environment (default process.cwd()). */
  readonly cwd?: string;
}

interface Candidate {
  readonly path: string;
  /** Missing files are an error only for the explicit path, as with kubectl. */
  readonly required: boolean;
}

/** The files that would be read, in precedence order. */
export function configCandidates(location: ConfigLocation = {}): Candidate[] {
  const env = location.env ?? process.env;
  const cwd = location.cwd ?? process.cwd();
  if (location.explicitPath !== undefined && location.explicitPath !== "") {
    return [{ path: resolve(cwd, location.explicitPath), required: true }];
  }
  const list = env[CONFIG_ENV];
  if (list !== undefined && list.trim() !== "") {
    const paths = [...new Set(list.split(delimiter).filter((p) => p.trim() !== "").map((p) => resolve(cwd, p)))];
    return paths.map((path) => ({ path, required: false }));
  }
  const home = env.HOME || homedir();
  return [{ path: join(home, ...DEFAULT_CONFIG_PATH), required: false }];
}

/** Reads and merges the client config; no file at all gives an empty config (flags may still name a server). */
export async function loadClientConfig(location: ConfigLocation = {}): Promise<ClientConfig> {
  const parsed: ParsedConfigFile[] = [];
  for (const candidate of configCandidates(location)) {
    let text: string;
    try {
      text = await readFile(candidate.path, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (!candidate.required && code === "ENOENT") continue;
      const what = code === "ENOENT" ? "does not exist" : `cannot be read (${code ?? (err as Error).message})`;
      throw new PlatformError("CONFIG_INVALID", `client config ${candidate.path} ${what}`, { cause: err, details: { file: candidate.path } });
    }
    parsed.push(parseConfigFile(text, candidate.path));
  }
  return mergeConfigFiles(parsed);
}

/** kubectl's merge: the first file to define a cluster, user or context name (or current-context) wins. */
export function mergeConfigFiles(files: readonly ParsedConfigFile[]): ClientConfig {
  const clusters = new Map<string, ClusterEntry>();
  const users = new Map<string, UserEntry>();
  const contexts = new Map<string, ContextEntry>();
  let currentContext: string | undefined;
  for (const f of files) {
    for (const c of f.clusters) if (!clusters.has(c.name)) clusters.set(c.name, c);
    for (const u of f.users) if (!users.has(u.name)) users.set(u.name, u);
    for (const c of f.contexts) if (!contexts.has(c.name)) contexts.set(c.name, c);
    currentContext ??= f.currentContext;
  }
  return { clusters, users, contexts, currentContext, files: files.map((f) => f.file) };
}

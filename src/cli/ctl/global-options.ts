// The inherited options of every platformctl command (seed 001 table) and how a command reads their merged values.
import { homedir } from "node:os";
import { join } from "node:path";
import { Option, type Command } from "commander";
import { DEFAULT_GROUP_SUFFIX } from "../../api/group.js";
import { addClientFlags, type ClientFlags } from "../../client/index.js";

export interface GlobalFlags extends ClientFlags {
  /** kubectl's name for --platformconfig. */
  readonly kubeconfig?: string;
  readonly warningsAsErrors?: boolean;
  readonly matchServerVersion?: boolean;
  readonly version?: string;
  readonly cacheDir: string;
  readonly profile: string;
  readonly profileOutput: string;
  readonly platformrc?: string;
  readonly groupSuffix: string;
}

/** Defaults applied after merging, so a default on an inner command never hides a value given on the outer one. */
export function globalDefaults(env: Readonly<Record<string, string | undefined>> = process.env): Record<string, unknown> {
  return {
    cacheDir: join(env.HOME ?? homedir(), ".platform", "cache"),
    profile: "none",
    profileOutput: "profile.pprof",
    requestTimeout: "0",
    groupSuffix: DEFAULT_GROUP_SUFFIX,
  };
}

/** Accepted for compatibility with the seed's option table; they configure nothing here. */
const IGNORED_STORAGE_DRIVER = [
  ["--storage-driver-buffer-duration <duration>", "accepted and ignored (buffering of storage-driver writes)"],
  ["--storage-driver-db <name>", "accepted and ignored (database name)"],
  ["--storage-driver-host <host:port>", "accepted and ignored (database host:port)"],
  ["--storage-driver-password <password>", "accepted and ignored (database password)"],
  ["--storage-driver-table <name>", "accepted and ignored (table name)"],
  ["--storage-driver-user <name>", "accepted and ignored (database username)"],
] as const;

/**
 * Adds the inherited options to `cmd`. They go on the root (shown in its help) and, hidden, on every command,
 * so they may appear anywhere on the line as kubectl allows (`platformctl get csr -n x`).
 */
export function addGlobalOptions(cmd: Command, hidden: boolean): Command {
  const before = cmd.options.length;
  addClientFlags(cmd);
  cmd
    .option("--warnings-as-errors", "treat server warnings as errors and exit non-zero")
    .option("--match-server-version", "require the server version to equal the client version")
    .addOption(new Option("--version <mode>", "--version, --version=raw print the version and quit; --version=vX.Y.Z sets the reported version"))
    .option("--cache-dir <dir>", "cache directory (default $HOME/.platform/cache)")
    .option("--profile <name>", "profile to capture: none, cpu or heap (default none)")
    .option("--profile-output <file>", "file for the profile (default profile.pprof; V8 .cpuprofile/.heapprofile JSON)")
    .option("--platformrc <path>", "preferences file (default ~/.platform/platformrc; PLATFORMRC=off disables)")
    .option("--group-suffix <suffix>", `API group suffix of the server (default ${DEFAULT_GROUP_SUFFIX})`);
  // Never in help: the ignored seed flags configure nothing, and --kubeconfig is only kubectl's spelling.
  const unlisted = cmd.options.length;
  cmd.option("--storage-driver-secure", "accepted and ignored (secure database connection)");
  for (const [flags, description] of IGNORED_STORAGE_DRIVER) cmd.option(flags, description);
  cmd.option("--kubeconfig <path>", "kubectl's name for --platformconfig");
  // addClientFlags gives --request-timeout a default; defaults are applied once, after merging (globalFlags).
  cmd.options.slice(before).forEach((opt, i) => {
    opt.defaultValue = undefined;
    if (hidden || before + i >= unlisted) opt.hideHelp();
  });
  return cmd;
}

/** Every inherited option as given anywhere on the command line (innermost wins), then the defaults. */
export function globalFlags(cmd: Command, env: Readonly<Record<string, string | undefined>> = process.env): GlobalFlags {
  const merged: Record<string, unknown> = {};
  for (let c: Command | null = cmd; c; c = c.parent) {
    for (const [key, value] of Object.entries(c.opts())) {
      if (value !== undefined && !(key in merged) && c.getOptionValueSource(key) !== "default") merged[key] = value;
    }
  }
  for (const [key, value] of Object.entries(globalDefaults(env))) if (merged[key] === undefined) merged[key] = value;
  return merged as unknown as GlobalFlags;
}

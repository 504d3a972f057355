// The inherited client options of the CLIs (--server, --token, --context, ...) and their RestConfig in one call.
import { Option, type Command } from "commander";
import { invalidOption } from "../errors.js";
import { parseDuration } from "../fields/duration.js";
import { loadClientConfig } from "./config-file.js";
import { resolveRestConfig, type ConfigOverrides } from "./resolve-config.js";
import type { RestConfig } from "./rest-config.js";

/** The parsed values, as commander names them (`opts()` / `optsWithGlobals()`). */
export interface ClientFlags {
  readonly platformconfig?: string;
  readonly context?: string;
  readonly cluster?: string;
  readonly user?: string;
  readonly server?: string;
  readonly token?: string;
  readonly username?: string;
  readonly password?: string;
  readonly clientCertificate?: string;
  readonly clientKey?: string;
  readonly certificateAuthority?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  readonly as?: string;
  readonly asGroup?: readonly string[];
  readonly asUid?: string;
  readonly requestTimeout?: string;
  readonly disableCompression?: boolean;
  readonly namespace?: string;
}

export interface FlagResolveOptions {
  /** Base of a relative --platformconfig or PLATFORMCONFIG entry (default process.cwd()). */
  readonly cwd?: string;
  readonly groupSuffix?: string;
  readonly userAgent?: string;
  readonly qps?: number;
  readonly burst?: number;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Adds the client options to a command (typically the root, so subcommands inherit them). */
export function addClientFlags(command: Command): Command {
  return command
    .option("--platformconfig <path>", "path of the client config file")
    .option("--context <name>", "name of the client-config context to use")
    .option("--cluster <name>", "name of the client-config cluster to use")
    .option("--user <name>", "name of the client-config user to use")
    .option("-s, --server <address>", "address and port of the API server")
    .option("--token <token>", "bearer token for the API server")
    .option("--username <name>", "basic-authentication username")
    .option("--password <password>", "basic-authentication password")
    .option("--client-certificate <file>", "client certificate file for TLS")
    .option("--client-key <file>", "client key file for TLS")
    .option("--certificate-authority <file>", "CA certificate file path")
    .option("--insecure-skip-tls-verify", "skip the server certificate check")
    .option("--tls-server-name <name>", "server name for certificate validation; defaults to the contacted host name")
    .option("--as <user>", "username to impersonate (user or namespaced service account)")
    .addOption(new Option("--as-group <group>", "group to impersonate; repeatable").argParser(collect))
    .option("--as-uid <uid>", "UID to impersonate")
    .option("--request-timeout <duration>", "wait before giving up on one request (1s, 2m, 3h); 0 means no timeout", "0")
    .option("--disable-compression", "opt out of response compression")
    .option("-n, --namespace <namespace>", "namespace scope");
}

/** `--request-timeout`: a duration in the one syntax (src/fields/duration.ts) such as 1s, 1m30s, 500ms, or whole seconds; 0 means no timeout. */
export function parseRequestTimeout(value: string): number {
  const ms = parseDuration(value.trim());
  if (ms === undefined || ms < 0) {
    throw invalidOption("--request-timeout", "to be 0, whole seconds, or a duration with a unit such as 1s, 2m, 3h", value);
  }
  return Math.round(ms);
}

/** The flags as overrides of the client config: anything given on the command line wins over the file. */
export function flagOverrides(flags: ClientFlags): ConfigOverrides {
  const strings: (keyof ClientFlags & keyof ConfigOverrides)[] = [
    "context", "cluster", "user", "server", "token", "username", "password", "clientCertificate", "clientKey",
    "certificateAuthority", "tlsServerName", "as", "asUid", "namespace",
  ];
  const o: Record<string, unknown> = {};
  for (const key of strings) {
    const value = flags[key];
    if (typeof value === "string" && value !== "") o[key] = value;
  }
  if (flags.insecureSkipTlsVerify) o.insecureSkipTlsVerify = true;
  if (flags.disableCompression) o.disableCompression = true;
  if (flags.asGroup && flags.asGroup.length > 0) o.asGroups = flags.asGroup;
  if (flags.requestTimeout !== undefined) o.timeoutMs = parseRequestTimeout(flags.requestTimeout);
  return o as ConfigOverrides;
}

/** Loads the client config the flags and environment point at and applies the flags over it. */
export async function restConfigFromFlags(
  flags: ClientFlags,
  env: Readonly<Record<string, string | undefined>> = process.env,
  options: FlagResolveOptions = {},
): Promise<RestConfig> {
  const overrides = flagOverrides(flags);
  const config = await loadClientConfig({ explicitPath: flags.platformconfig, env, cwd: options.cwd });
  return resolveRestConfig(
    config,
    { ...overrides, userAgent: options.userAgent, qps: options.qps, burst: options.burst },
    { groupSuffix: options.groupSuffix },
  );
}

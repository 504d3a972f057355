// RestConfig: everything the client needs to reach one API server as one identity, and its defaults.
import type { MessagePort } from "node:worker_threads";
import { invalidOption, PlatformError } from "../errors.js";
import { VERSION } from "../version.js";

/** TLS settings of the connection; PEM texts, already read from files or decoded from `*-data` fields. */
export interface TlsConfig {
  /** PEM CA certificates trusted for the server; system roots when absent. */
  readonly ca?: string;
  /** PEM client certificate chain and its private key (mutual TLS). */
  readonly cert?: string;
  readonly key?: string;
  readonly insecureSkipVerify?: boolean;
  /** Name checked against the server certificate (and sent as SNI); defaults to the host of `server`. */
  readonly serverName?: string;
}

export type InteractiveMode = "Never" | "IfAvailable" | "Always";

/** An exec credential plugin as configured in the client config file (`users[].user.exec`). */
export interface ExecConfig {
  readonly apiVersion: string;
  /** Absolute, relative to the config file (when it contains a path separator), or looked up on PATH. */
  readonly command: string;
  readonly args: readonly string[];
  readonly env: readonly { readonly name: string; readonly value: string }[];
  readonly interactiveMode: InteractiveMode;
  readonly provideClusterInfo: boolean;
  readonly installHint?: string;
  /** The cluster extension `client.authentication.<suffix>/exec`, passed as `spec.cluster.config`. */
  readonly clusterConfig?: unknown;
}

/** How requests authenticate; a client certificate travels in `tls` and combines with any of these. */
export type Credentials =
  | { readonly type: "none" }
  | { readonly type: "token"; readonly token: string }
  /** A token file re-read whenever it changes (rotated service-account tokens). */
  | { readonly type: "token-file"; readonly path: string }
  | { readonly type: "basic"; readonly username: string; readonly password: string }
  | { readonly type: "exec"; readonly exec: ExecConfig };

export interface Impersonation {
  readonly user?: string;
  readonly groups?: readonly string[];
  readonly uid?: string;
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

export interface RestConfig {
  /** `https://host:port` with an optional path prefix, no trailing slash. */
  readonly server: string;
  readonly tls: TlsConfig;
  readonly credentials: Credentials;
  /** Namespace of namespaced calls that name none. */
  readonly namespace: string;
  readonly impersonate?: Impersonation;
  /** Limit of one non-watch request, headers to last byte; 0 or absent means none. */
  readonly timeoutMs?: number;
  /** Sustained requests per second (≤ 0: unlimited) and the burst above it. */
  readonly qps: number;
  readonly burst: number;
  readonly userAgent: string;
  /** Do not ask for gzip-compressed responses. */
  readonly disableCompression?: boolean;
  /** HTTP proxy for every request (CONNECT tunnel for https servers). */
  readonly proxyUrl?: string;
  /** `Accept` header (default `application/json`) and the body content type of writes. */
  readonly accept?: string;
  readonly contentType?: string;
  /**
   * A unix-domain socket to connect to in place of the server's host and port (plain HTTP servers only: the socket
   * of a co-located server, whose file permissions already keep other users out).
   */
  readonly socketPath?: string;
  /**
   * The client end of a co-located server's in-thread channel (`platform-ca up`'s controllers): whole-body requests
   * go over it as objects, with no socket or HTTP (plain-HTTP servers only); watches still use `socketPath` (or the
   * server's address).
   */
  readonly channel?: MessagePort;
}

/** client-go's defaults: a controller that needs more raises them in its ClientConnectionConfiguration. */
export const DEFAULT_QPS = 5;
export const DEFAULT_BURST = 10;
export const DEFAULT_NAMESPACE = "default";

export function defaultUserAgent(program = "platform-ca"): string {
  return `${program}/${VERSION} (${process.platform}/${process.arch}) node/${process.version}`;
}

/**
 * Normalizes a server address the way kubectl reads `--server`: a bare `host:port` means https, a path
 * prefix is kept, query and fragment are refused.
 */
export function normalizeServer(value: string, field = "server"): string {
  const text = value.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new PlatformError("CONFIG_INVALID", `${field}: ${JSON.stringify(value)} is not a URL (expected https://host:port)`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new PlatformError("CONFIG_INVALID", `${field}: scheme ${JSON.stringify(url.protocol.slice(0, -1))} is not supported (expected https or http)`);
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new PlatformError("CONFIG_INVALID", `${field}: ${JSON.stringify(value)} must not carry credentials, a query or a fragment`);
  }
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/** Checks the numeric settings once, with the one option-message shape. */
export function checkRestConfig(config: RestConfig): void {
  if (typeof config.server !== "string" || config.server === "") throw invalidOption("server", "to be an https:// or http:// URL", config.server);
  if (!Number.isFinite(config.qps)) throw invalidOption("qps", "to be a number (≤ 0 for unlimited)", config.qps);
  if (config.qps > 0 && (!Number.isInteger(config.burst) || config.burst < 1)) {
    throw invalidOption("burst", "to be an integer ≥ 1 when qps > 0", config.burst);
  }
  if (config.timeoutMs !== undefined && (!Number.isFinite(config.timeoutMs) || config.timeoutMs < 0)) {
    throw invalidOption("timeoutMs", "to be ≥ 0 (0 for no timeout)", config.timeoutMs);
  }
}

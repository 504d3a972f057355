// RestConfig from a controller's ClientConnectionConfiguration (kubeconfig, acceptContentTypes, contentType, qps, burst).
import { invalidOption } from "../errors.js";
import { loadClientConfig } from "./config-file.js";
import { resolveRestConfig } from "./resolve-config.js";
import type { RestConfig } from "./rest-config.js";

export interface ClientConnectionConfiguration {
  /** Path of a client config file; empty means the usual search ($PLATFORMCONFIG, ~/.platform/config). */
  readonly kubeconfig?: string;
  readonly acceptContentTypes?: string;
  readonly contentType?: string;
  readonly qps?: number;
  readonly burst?: number;
}

export interface ConnectionResolveOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
  readonly groupSuffix?: string;
  readonly userAgent?: string;
  /** Context to use instead of the file's current-context. */
  readonly context?: string;
}

const JSON_LIKE = /^application\/(?:[a-z0-9.+-]*\+)?json\b/i;

export async function restConfigFromConnection(conn: ClientConnectionConfiguration, options: ConnectionResolveOptions = {}): Promise<RestConfig> {
  if (conn.qps !== undefined && !Number.isFinite(conn.qps)) throw invalidOption("clientConnection.qps", "to be a number", conn.qps);
  if (conn.burst !== undefined && (!Number.isInteger(conn.burst) || conn.burst < 0)) {
    throw invalidOption("clientConnection.burst", "to be an integer ≥ 0", conn.burst);
  }
  // Responses are decoded as JSON (or YAML); a protobuf-only Accept would leave nothing we can read.
  if (conn.contentType && !JSON_LIKE.test(conn.contentType)) {
    throw invalidOption("clientConnection.contentType", "to be application/json", conn.contentType);
  }
  const config = await loadClientConfig({ explicitPath: conn.kubeconfig, env: options.env, cwd: options.cwd });
  return resolveRestConfig(
    config,
    {
      context: options.context,
      qps: conn.qps,
      // upstream treats burst 0 as "unset" next to a positive qps
      burst: conn.burst === 0 ? undefined : conn.burst,
      accept: conn.acceptContentTypes || undefined,
      contentType: conn.contentType || undefined,
      userAgent: options.userAgent,
    },
    { groupSuffix: options.groupSuffix },
  );
}

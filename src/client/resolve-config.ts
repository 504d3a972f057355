// Turns the merged client config plus overrides (flags) into one RestConfig, with kubectl's precedence rules.
import { groupNames } from "../api/group.js";
import { invalidOption, PlatformError } from "../errors.js";
import { documentError, fieldMessage, Shown } from "../fields/reader.js";
import type { ClientConfig, ClusterEntry, ContextEntry, UserEntry } from "./config-file.js";
import {
  checkRestConfig,
  DEFAULT_BURST,
  DEFAULT_NAMESPACE,
  DEFAULT_QPS,
  defaultUserAgent,
  normalizeServer,
  type Credentials,
  type Impersonation,
  type RestConfig,
  type TlsConfig,
} from "./rest-config.js";
import { readCaBundle, readClientPair, type PemSource } from "./tls-material.js";

/** What flags (or a caller) put above the file; every field is optional. */
export interface ConfigOverrides {
  readonly context?: string;
  readonly cluster?: string;
  readonly user?: string;
  readonly server?: string;
  readonly certificateAuthority?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  readonly token?: string;
  readonly username?: string;
  readonly password?: string;
  readonly clientCertificate?: string;
  readonly clientKey?: string;
  readonly as?: string;
  readonly asGroups?: readonly string[];
  readonly asUid?: string;
  readonly namespace?: string;
  readonly timeoutMs?: number;
  readonly disableCompression?: boolean;
  readonly qps?: number;
  readonly burst?: number;
  readonly userAgent?: string;
  readonly accept?: string;
  readonly contentType?: string;
}

export interface ResolveOptions {
  /** API group suffix the exec plugin apiVersion and the cluster extension key derive from. */
  readonly groupSuffix?: string;
}

function configError(message: string, details: Record<string, unknown> = {}): PlatformError {
  return new PlatformError("CONFIG_INVALID", message, { details });
}

type Located = { readonly origin: { readonly file: string; readonly field: string } };
const where = (entry: Located) => `client config ${entry.origin.file}: ${entry.origin.field}`;
const at = (entry: Located, key: string) => `${where(entry)}.${key}`;

/** A rule a field of the file breaks, in the one shape of field errors (as the file's reading reports them). */
function fieldError(entry: Located, key: string, expectation: string, got: unknown): PlatformError {
  const field = key === "" ? entry.origin.field : `${entry.origin.field}.${key}`;
  const cause = { field, message: fieldMessage(field, expectation, got), reason: "FieldValueInvalid" };
  return documentError("CONFIG_INVALID", `client config ${entry.origin.file}`, [cause], { file: entry.origin.file });
}
const BOTH = new Shown("both");

/** Picks context, cluster and user, applies overrides, reads TLS material, and checks the result. */
export async function resolveRestConfig(config: ClientConfig, o: ConfigOverrides = {}, options: ResolveOptions = {}): Promise<RestConfig> {
  const names = groupNames(options.groupSuffix);
  const files = config.files.length > 0 ? config.files.join(", ") : "(no client config file found)";
  const lookup = <T>(map: ReadonlyMap<string, T>, kind: string, name: string | undefined, via: string): T | undefined => {
    if (name === undefined) return undefined;
    const found = map.get(name);
    if (!found) throw configError(`${kind} ${JSON.stringify(name)} (${via}) is not defined in ${files}`, { [kind]: name });
    return found;
  };
  const contextName = o.context ?? config.currentContext;
  const context: ContextEntry | undefined = lookup(config.contexts, "context", contextName, o.context ? "--context" : "current-context");
  const cluster = lookup(config.clusters, "cluster", o.cluster ?? context?.cluster, o.cluster ? "--cluster" : `context ${JSON.stringify(contextName)}`);
  const user = lookup(config.users, "user", o.user ?? context?.user, o.user ? "--user" : `context ${JSON.stringify(contextName)}`);

  const serverText = o.server ?? cluster?.server;
  if (serverText === undefined) {
    throw configError(`no API server address: pass --server, or select a context whose cluster sets \`server\` (read: ${files})`, { missing: "server" });
  }
  const server = normalizeServer(serverText, o.server !== undefined ? "--server" : cluster ? at(cluster, "server") : "server");

  const tls = await resolveTls(cluster, user, o);
  const credentials = resolveCredentials(user, o, cluster, `client.${names.authentication}`);
  const impersonate = resolveImpersonation(user, o);
  const proxyUrl = cluster?.proxyUrl === undefined ? undefined : checkProxy(cluster.proxyUrl, cluster);
  const result: RestConfig = {
    server,
    tls,
    credentials,
    namespace: o.namespace ?? context?.namespace ?? DEFAULT_NAMESPACE,
    ...(impersonate ? { impersonate } : {}),
    timeoutMs: o.timeoutMs ?? 0,
    qps: o.qps ?? DEFAULT_QPS,
    burst: o.burst ?? DEFAULT_BURST,
    userAgent: o.userAgent ?? defaultUserAgent(),
    disableCompression: o.disableCompression ?? cluster?.disableCompression ?? false,
    ...(proxyUrl ? { proxyUrl } : {}),
    ...(o.accept ? { accept: o.accept } : {}),
    ...(o.contentType ? { contentType: o.contentType } : {}),
  };
  checkRestConfig(result);
  return result;
}

async function resolveTls(cluster: ClusterEntry | undefined, user: UserEntry | undefined, o: ConfigOverrides): Promise<TlsConfig> {
  // As kubectl: --insecure-skip-tls-verify drops the file's CA, and --server drops the file's tls-server-name.
  const insecure = o.insecureSkipTlsVerify ?? cluster?.insecureSkipTlsVerify ?? false;
  let ca: PemSource | undefined;
  if (o.certificateAuthority !== undefined) ca = { where: "--certificate-authority", path: o.certificateAuthority };
  else if (cluster && !o.insecureSkipTlsVerify) {
    if (cluster.certificateAuthority !== undefined && cluster.certificateAuthorityData !== undefined) {
      throw fieldError(cluster, "certificate-authority", "either certificate-authority or certificate-authority-data, not both", BOTH);
    }
    if (cluster.certificateAuthorityData !== undefined) ca = { where: at(cluster, "certificate-authority-data"), data: cluster.certificateAuthorityData };
    else if (cluster.certificateAuthority !== undefined) ca = { where: at(cluster, "certificate-authority"), path: cluster.certificateAuthority };
  }
  if (insecure && ca) {
    throw configError(`${ca.where}: a certificate authority cannot be combined with insecure-skip-tls-verify`);
  }
  const serverName = o.server !== undefined ? o.tlsServerName : (o.tlsServerName ?? cluster?.tlsServerName);
  const pair = await resolveClientPair(user, o);
  return {
    ...(ca ? { ca: await readCaBundle(ca) } : {}),
    ...(pair ?? {}),
    ...(insecure ? { insecureSkipVerify: true } : {}),
    ...(serverName ? { serverName } : {}),
  };
}

async function resolveClientPair(user: UserEntry | undefined, o: ConfigOverrides): Promise<{ cert: string; key: string } | undefined> {
  if (o.clientCertificate !== undefined || o.clientKey !== undefined) {
    if (o.clientCertificate === undefined) throw invalidOption("--client-certificate", "to be set with --client-key", undefined);
    if (o.clientKey === undefined) throw invalidOption("--client-key", "to be set with --client-certificate", undefined);
    return readClientPair({ where: "--client-certificate", path: o.clientCertificate }, { where: "--client-key", path: o.clientKey });
  }
  if (!user) return undefined;
  const source = (file: string | undefined, data: string | undefined, key: string): PemSource | undefined => {
    if (file !== undefined && data !== undefined) throw fieldError(user, key, `either ${key} or ${key}-data, not both`, BOTH);
    if (data !== undefined) return { where: at(user, `${key}-data`), data };
    return file === undefined ? undefined : { where: at(user, key), path: file };
  };
  const cert = source(user.clientCertificate, user.clientCertificateData, "client-certificate");
  const key = source(user.clientKey, user.clientKeyData, "client-key");
  if (!cert && !key) return undefined;
  if (!cert || !key) throw fieldError(user, cert ? "client-key" : "client-certificate", `to be set with ${cert ? "the client certificate" : "the client key"}`, undefined);
  return readClientPair(cert, key);
}

function resolveCredentials(user: UserEntry | undefined, o: ConfigOverrides, cluster: ClusterEntry | undefined, authGroup: string): Credentials {
  if (o.token !== undefined && o.token !== "") return { type: "token", token: o.token };
  if (o.username !== undefined) return { type: "basic", username: o.username, password: o.password ?? "" };
  if (o.password !== undefined) throw invalidOption("--username", "to be set with --password", undefined);
  if (!user) return { type: "none" };
  const methods = [
    user.token !== undefined || user.tokenFile !== undefined ? "token" : undefined,
    user.username !== undefined || user.password !== undefined ? "basic authentication" : undefined,
    user.exec ? "exec" : undefined,
  ].filter((m) => m !== undefined);
  if (methods.length > 1) {
    throw fieldError(user, "", "one authentication method", new Shown(methods.join(", ")));
  }
  // A static token wins over tokenFile, as with kubectl.
  if (user.token !== undefined) return { type: "token", token: user.token };
  if (user.tokenFile !== undefined) return { type: "token-file", path: user.tokenFile };
  if (user.username !== undefined || user.password !== undefined) {
    return { type: "basic", username: user.username ?? "", password: user.password ?? "" };
  }
  if (user.exec) {
    const allowed = [`${authGroup}/v1`, `${authGroup}/v1beta1`];
    if (!allowed.includes(user.exec.apiVersion)) {
      throw fieldError(user, "exec.apiVersion", allowed.join(" or "), user.exec.apiVersion);
    }
    const clusterConfig = cluster?.extensions[`${authGroup}/exec`];
    return { type: "exec", exec: { ...user.exec, ...(clusterConfig !== undefined ? { clusterConfig } : {}) } };
  }
  if (user.authProvider !== undefined) {
    throw fieldError(user, "auth-provider", "an exec credential plugin instead (auth providers are not supported)", new Shown(`auth provider ${JSON.stringify(user.authProvider)}`));
  }
  return { type: "none" };
}

function resolveImpersonation(user: UserEntry | undefined, o: ConfigOverrides): Impersonation | undefined {
  const userName = o.as ?? user?.as;
  const groups = o.asGroups && o.asGroups.length > 0 ? o.asGroups : user?.asGroups;
  const uid = o.asUid ?? user?.asUid;
  const extra = user?.asUserExtra;
  const hasExtra = extra !== undefined && Object.keys(extra).length > 0;
  if (!userName && ((groups && groups.length > 0) || uid || hasExtra)) {
    throw invalidOption("--as", "to name the user to impersonate when groups, a uid or extra are impersonated", userName);
  }
  if (!userName) return undefined;
  return { user: userName, ...(groups && groups.length > 0 ? { groups } : {}), ...(uid ? { uid } : {}), ...(hasExtra ? { extra } : {}) };
}

function checkProxy(value: string, cluster: ClusterEntry): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || url.protocol !== "http:") throw fieldError(cluster, "proxy-url", "an http:// proxy URL", value);
  return value;
}

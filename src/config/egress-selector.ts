// EgressSelectorConfiguration (apiserver.<suffix>/v1alpha1, v1beta1): how the server's outbound connections leave it, per selection.
import { existsSync } from "node:fs";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { apiserverConfigVersions } from "./apiserver-config-group.js";
import { FieldReader, join } from "../fields/reader.js";

export const EGRESS_SELECTOR_KIND = "EgressSelectorConfiguration";
const WHAT = "egress selector configuration";

/** The selections: traffic to the control plane (webhooks, OIDC, KMS), to the storage, to the cluster. */
export const EGRESS_NAMES = ["controlplane", "etcd", "cluster"] as const;
export type EgressName = (typeof EGRESS_NAMES)[number];
/** Upstream's former name of `controlplane`, still accepted with a warning. */
const DEPRECATED_NAMES: Readonly<Record<string, EgressName>> = { master: "controlplane" };
const PROTOCOLS = ["Direct", "HTTPConnect", "GRPC"] as const;

export interface EgressTlsConfig {
  /** CA bundle file for the proxy's certificate; the system roots when unset. */
  readonly caBundle?: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

/** Where the HTTP CONNECT proxy listens: a TCP URL (http:// or https:// with mutual TLS) or a Unix socket. */
export type EgressTransport = { readonly tcp: { readonly url: string; readonly tlsConfig?: EgressTlsConfig } } | { readonly uds: { readonly udsName: string } };

export type EgressConnection = { readonly proxyProtocol: "Direct" } | { readonly proxyProtocol: "HTTPConnect"; readonly transport: EgressTransport };

export interface EgressSelectorConfig {
  /** The configured selections; one that is absent dials directly. */
  readonly selections: ReadonlyMap<EgressName, EgressConnection>;
}

export interface LoadedEgressSelectorConfig {
  readonly source: string;
  readonly config: EgressSelectorConfig;
  /** Unknown fields (with `strict: false`) and deprecated names, for the caller to log. */
  readonly warnings: readonly string[];
}

/** The kind is served in v1beta1 and v1alpha1 only (the kinds table of seed 002 §2.6). */
export function egressSelectorApiVersions(groupSuffix?: string): string[] {
  const v = apiserverConfigVersions(groupSuffix);
  return [v.v1beta1, v.v1alpha1];
}

/** A file named in tlsConfig: required or optional, and it must exist when named (checked at start, as upstream). */
function tlsFile(r: FieldReader, tls: Record<string, unknown>, at: string, key: keyof EgressTlsConfig, required: boolean, exists: (path: string) => boolean): string | undefined {
  const path = join(at, key);
  const value = r.string(tls[key], path);
  if (value === undefined || value === "") return required ? r.missing(path, "to name a file (required with an https:// url: the proxy is reached with mutual TLS)") : undefined;
  return exists(value) ? value : r.problem(path, "an existing file", value);
}

function readTcp(r: FieldReader, raw: unknown, at: string, exists: (path: string) => boolean): EgressTransport | undefined {
  const tcp = r.object(raw, at, ["url", "tlsConfig"]) ?? {};
  const url = r.string(tcp.url, join(at, "url"), { nonEmpty: true });
  if (url === undefined) return tcp.url === undefined ? r.missing(join(at, "url"), "to be the proxy's http:// or https:// URL") : undefined;
  const tlsAt = join(at, "tlsConfig");
  const tls = r.object(tcp.tlsConfig, tlsAt, ["caBundle", "clientKey", "clientCert"]);
  if (url.startsWith("http://")) {
    if (tls !== undefined) return r.problem(tlsAt, "to be absent with an http:// url (plain TCP to the proxy)", tls);
    return { tcp: { url } };
  }
  if (!url.startsWith("https://")) return r.problem(join(at, "url"), "an http:// or https:// URL", url);
  if (tls === undefined) return r.missing(tlsAt, "to be set with an https:// url (clientCert and clientKey, optionally caBundle)");
  const caBundle = tlsFile(r, tls, tlsAt, "caBundle", false, exists);
  const clientCert = tlsFile(r, tls, tlsAt, "clientCert", true, exists);
  const clientKey = tlsFile(r, tls, tlsAt, "clientKey", true, exists);
  if (clientCert === undefined || clientKey === undefined) return undefined;
  return { tcp: { url, tlsConfig: { ...(caBundle !== undefined && { caBundle }), clientCert, clientKey } } };
}

function readTransport(r: FieldReader, raw: unknown, at: string, exists: (path: string) => boolean): EgressTransport | undefined {
  const transport = r.object(raw, at, ["tcp", "uds"]);
  if (transport === undefined) return r.missing(at, "to be set with proxyProtocol HTTPConnect (tcp or uds)");
  if (transport.tcp != null && transport.uds != null) return r.problem(at, "to set one of `tcp` and `uds`, not both", transport);
  if (transport.tcp != null) return readTcp(r, transport.tcp, join(at, "tcp"), exists);
  if (transport.uds == null) return r.missing(join(at, "tcp"), "or `uds` to be set");
  const uds = r.object(transport.uds, join(at, "uds"), ["udsName"]) ?? {};
  const udsName = r.string(uds.udsName, join(at, "uds.udsName"), { nonEmpty: true });
  if (udsName === undefined) return uds.udsName === undefined ? r.missing(join(at, "uds.udsName"), "to be the proxy's socket path") : undefined;
  if (udsName.startsWith("unix://")) return r.problem(join(at, "uds.udsName"), "a socket path without the unix:// prefix", udsName);
  return { uds: { udsName } };
}

function readConnection(r: FieldReader, raw: unknown, at: string, exists: (path: string) => boolean): EgressConnection | undefined {
  const connection = r.object(raw, at, ["proxyProtocol", "transport"]);
  if (connection === undefined) return r.missing(at, "to be set (proxyProtocol and, for HTTPConnect, transport)");
  const protocol = connection.proxyProtocol;
  if (protocol === undefined || protocol === null) return r.missing(join(at, "proxyProtocol"), `to be one of ${PROTOCOLS.join(", ")}`);
  if (protocol === "GRPC") {
    return r.problem(join(at, "proxyProtocol"), "Direct or HTTPConnect (GRPC, the konnectivity tunnel protocol, is not implemented: run the proxy in HTTPConnect mode)", protocol);
  }
  const proxyProtocol = r.oneOf(protocol, join(at, "proxyProtocol"), PROTOCOLS, "Direct");
  if (proxyProtocol !== protocol) return undefined;
  if (proxyProtocol === "Direct") {
    if (connection.transport != null) return r.problem(join(at, "transport"), "to be absent with proxyProtocol Direct", connection.transport);
    return { proxyProtocol: "Direct" };
  }
  const transport = readTransport(r, connection.transport, join(at, "transport"), exists);
  return transport && { proxyProtocol: "HTTPConnect", transport };
}

export function parseEgressSelectorConfig(text: string, source: string, options: ConfigLoadOptions & { readonly exists?: (path: string) => boolean } = {}): LoadedEgressSelectorConfig {
  const exists = options.exists ?? existsSync;
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: egressSelectorApiVersions(options.groupSuffix), kind: EGRESS_SELECTOR_KIND }, r);
  r.object(doc, "", ["apiVersion", "kind", "egressSelections"]);
  if (doc.egressSelections === undefined || doc.egressSelections === null) r.missing("egressSelections", "to be a list of selections (name and connection)");
  const selections = new Map<EgressName, EgressConnection>();
  const deprecated: string[] = [];
  r.list(doc.egressSelections, "egressSelections", (raw, at) => {
    const selection = r.object(raw, at, ["name", "connection"]) ?? {};
    const written = r.string(selection.name, join(at, "name"));
    const name = written !== undefined && DEPRECATED_NAMES[written] ? DEPRECATED_NAMES[written] : written;
    if (written !== name) deprecated.push(`${join(at, "name")}: "${written}" is deprecated, read as "${name}"`);
    if (name === undefined) return selection.name === undefined ? r.missing(join(at, "name"), `to be one of ${EGRESS_NAMES.join(", ")}`) : undefined;
    if (!(EGRESS_NAMES as readonly string[]).includes(name)) return r.problem(join(at, "name"), `one of ${EGRESS_NAMES.join(", ")} (or master, deprecated)`, written);
    if (selections.has(name as EgressName)) return r.problem(join(at, "name"), `a selection not already configured (${name} is listed twice)`, written);
    const connection = readConnection(r, selection.connection, join(at, "connection"), exists);
    if (connection) selections.set(name as EgressName, connection);
    return connection;
  });
  const warnings = finish(r, { ...options, strict: options.strict ?? true }, WHAT, source);
  return { source, config: { selections }, warnings: [...warnings, ...deprecated] };
}

export async function loadEgressSelectorConfig(path: string, options: ConfigLoadOptions = {}): Promise<LoadedEgressSelectorConfig> {
  return parseEgressSelectorConfig(await readConfigFile(path, WHAT), path, options);
}

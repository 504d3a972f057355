// Parses one client config file (kubeconfig format, YAML or JSON) into named clusters, users and contexts.
import { dirname, isAbsolute, resolve } from "node:path";
import { parseDocument } from "yaml";
import { PlatformError } from "../errors.js";
import { YAML_READ, plainYamlValue } from "../plain-data.js";
import { FieldReader, type Doc } from "./config-fields.js";
import type { ExecConfig, InteractiveMode } from "./rest-config.js";

/** Where an entry was defined, for messages: the file and `users[2]`. */
export interface Origin {
  readonly file: string;
  readonly field: string;
}

export interface ClusterEntry {
  readonly name: string;
  readonly origin: Origin;
  readonly server?: string;
  /** Absolute path (relative paths are resolved against the config file's directory). */
  readonly certificateAuthority?: string;
  /** PEM text decoded from `certificate-authority-data`. */
  readonly certificateAuthorityData?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
  readonly disableCompression?: boolean;
  /** `extensions[]` by name. */
  readonly extensions: Readonly<Record<string, unknown>>;
}

export interface UserEntry {
  readonly name: string;
  readonly origin: Origin;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly clientCertificate?: string;
  readonly clientCertificateData?: string;
  readonly clientKey?: string;
  readonly clientKeyData?: string;
  readonly username?: string;
  readonly password?: string;
  /** Exec plugin; `apiVersion` is checked against the group suffix when the user is selected. */
  readonly exec?: Omit<ExecConfig, "clusterConfig">;
  readonly as?: string;
  readonly asGroups?: readonly string[];
  readonly asUid?: string;
  readonly asUserExtra?: Readonly<Record<string, readonly string[]>>;
  /** Set when the entry uses the legacy `auth-provider`, which this client does not run. */
  readonly authProvider?: string;
}

export interface ContextEntry {
  readonly name: string;
  readonly origin: Origin;
  readonly cluster?: string;
  readonly user?: string;
  readonly namespace?: string;
}

export interface ParsedConfigFile {
  readonly file: string;
  readonly clusters: readonly ClusterEntry[];
  readonly users: readonly UserEntry[];
  readonly contexts: readonly ContextEntry[];
  readonly currentContext?: string;
}

const INTERACTIVE_MODES: readonly InteractiveMode[] = ["Never", "IfAvailable", "Always"];

/** Parses the text of `file` (an absolute path); unknown keys are ignored, as other clients write them. */
export function parseConfigFile(text: string, file: string): ParsedConfigFile {
  let root: unknown;
  const doc = parseDocument(text, { ...YAML_READ, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new PlatformError("CONFIG_INVALID", `client config ${file}: not valid YAML or JSON: ${doc.errors[0]!.message}`, { details: { file } });
  }
  try {
    root = plainYamlValue(doc);
  } catch (err) {
    throw new PlatformError("CONFIG_INVALID", `client config ${file}: ${(err as Error).message}`, { cause: err, details: { file } });
  }
  const r = new FieldReader(file);
  const top = root === null || root === undefined ? {} : r.object(root, "(top level)");
  r.fail();
  const dir = dirname(file);
  const path = (value: string | undefined) => (value === undefined || isAbsolute(value) ? value : resolve(dir, value));
  const apiVersion = r.string(top!, "apiVersion", "(top level)");
  if (apiVersion !== undefined && apiVersion !== "v1") r.problem("apiVersion", `expected "v1", got ${JSON.stringify(apiVersion)}`);
  const kind = r.string(top!, "kind", "(top level)");
  if (kind !== undefined && kind !== "Config") r.problem("kind", `expected "Config", got ${JSON.stringify(kind)}`);

  const named = (key: "clusters" | "users" | "contexts", inner: "cluster" | "user" | "context") => {
    const seen = new Set<string>();
    return r.list(top![key], key).flatMap((item, i) => {
      const field = `${key}[${i}]`;
      const entry = r.object(item, field);
      if (!entry) {
        if (item === null || item === undefined) r.problem(field, `expected a mapping with \`name\` and \`${inner}\``);
        return [];
      }
      const name = r.requiredString(entry, "name", field);
      if (name !== undefined && seen.has(name)) r.problem(`${field}.name`, `${JSON.stringify(name)} is defined twice in this file`);
      if (name !== undefined) seen.add(name);
      const body = r.object(entry[inner], `${field}.${inner}`) ?? {};
      return name === undefined ? [] : [{ name, body, origin: { file, field: `${field}.${inner}` } }];
    });
  };

  const clusters = named("clusters", "cluster").map(({ name, body, origin }): ClusterEntry => {
    const f = origin.field;
    return {
      name,
      origin,
      server: r.string(body, "server", f),
      certificateAuthority: path(r.string(body, "certificate-authority", f)),
      certificateAuthorityData: r.base64(body, "certificate-authority-data", f),
      insecureSkipTlsVerify: r.boolean(body, "insecure-skip-tls-verify", f),
      tlsServerName: r.string(body, "tls-server-name", f),
      proxyUrl: r.string(body, "proxy-url", f),
      disableCompression: r.boolean(body, "disable-compression", f),
      extensions: extensions(r, body, f),
    };
  });

  const users = named("users", "user").map(({ name, body, origin }): UserEntry => {
    const f = origin.field;
    const provider = r.object(body["auth-provider"], `${f}.auth-provider`);
    return {
      name,
      origin,
      token: r.string(body, "token", f),
      tokenFile: path(r.string(body, "tokenFile", f)),
      clientCertificate: path(r.string(body, "client-certificate", f)),
      clientCertificateData: r.base64(body, "client-certificate-data", f),
      clientKey: path(r.string(body, "client-key", f)),
      clientKeyData: r.base64(body, "client-key-data", f),
      username: r.string(body, "username", f),
      password: r.string(body, "password", f),
      exec: execConfig(r, body, f, dir),
      as: r.string(body, "as", f),
      asGroups: r.strings(body, "as-groups", f),
      asUid: r.string(body, "as-uid", f),
      asUserExtra: userExtra(r, body, f),
      authProvider: provider ? (typeof provider.name === "string" ? provider.name : "(unnamed)") : undefined,
    };
  });

  const contexts = named("contexts", "context").map(({ name, body, origin }): ContextEntry => ({
    name,
    origin,
    cluster: r.string(body, "cluster", origin.field),
    user: r.string(body, "user", origin.field),
    namespace: r.string(body, "namespace", origin.field),
  }));

  const currentContext = r.string(top!, "current-context", "(top level)");
  r.fail();
  return { file, clusters, users, contexts, currentContext };
}

function extensions(r: FieldReader, body: Doc, field: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  r.list(body.extensions, `${field}.extensions`).forEach((item, i) => {
    const f = `${field}.extensions[${i}]`;
    const ext = r.object(item, f);
    const name = ext && r.requiredString(ext, "name", f);
    if (ext && name !== undefined) out[name] = ext.extension;
  });
  return out;
}

function userExtra(r: FieldReader, body: Doc, field: string): Record<string, string[]> | undefined {
  const extra = r.object(body["as-user-extra"], `${field}.as-user-extra`);
  if (!extra) return undefined;
  const out: Record<string, string[]> = {};
  for (const key of Object.keys(extra)) {
    const values = r.strings(extra, key, `${field}.as-user-extra`);
    if (values) out[key] = values;
  }
  return out;
}

function execConfig(r: FieldReader, body: Doc, field: string, dir: string): UserEntry["exec"] {
  const f = `${field}.exec`;
  const exec = r.object(body.exec, f);
  if (!exec) return undefined;
  const apiVersion = r.requiredString(exec, "apiVersion", f);
  const command = r.requiredString(exec, "command", f);
  const env = r.list(exec.env, `${f}.env`).flatMap((item, i) => {
    const ef = `${f}.env[${i}]`;
    const e = r.object(item, ef);
    const name = e && r.requiredString(e, "name", ef);
    if (!e || name === undefined) return [];
    return [{ name, value: r.string(e, "value", ef) ?? "" }];
  });
  const mode = r.string(exec, "interactiveMode", f);
  if (mode !== undefined && !INTERACTIVE_MODES.includes(mode as InteractiveMode)) {
    r.problem(`${f}.interactiveMode`, `expected one of ${INTERACTIVE_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  }
  if (apiVersion === undefined || command === undefined) return undefined;
  // kubectl's rule: only a command with a path separator is relative to the file; a bare name is looked up on PATH.
  const resolved = !isAbsolute(command) && command.includes("/") ? resolve(dir, command) : command;
  return {
    apiVersion,
    command: resolved,
    args: r.strings(exec, "args", f) ?? [],
    env,
    interactiveMode: (mode as InteractiveMode | undefined) ?? "IfAvailable",
    provideClusterInfo: r.boolean(exec, "provideClusterInfo", f) ?? false,
    installHint: r.string(exec, "installHint", f),
  };
}

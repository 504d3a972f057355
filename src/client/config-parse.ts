// Parses one client config file (kubeconfig format, YAML or JSON) into named clusters, users and contexts.
import { Buffer } from "node:buffer";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseDocument } from "yaml";
import { PlatformError } from "../errors.js";
import { YAML_READ, plainYamlValue } from "../plain-data.js";
import { FieldReader, join, Shown, type Doc } from "../fields/reader.js";
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
  const r = new FieldReader();
  const top = r.object(root, "") ?? {};
  r.throwIfInvalid("CONFIG_INVALID", "client config", file, { details: { file } });
  const f = fields(r);
  const dir = dirname(file);
  const path = (value: string | undefined) => (value === undefined || isAbsolute(value) ? value : resolve(dir, value));
  const apiVersion = f.string(top, "apiVersion", "");
  if (apiVersion !== undefined && apiVersion !== "v1") r.problem("apiVersion", '"v1"', apiVersion);
  const kind = f.string(top, "kind", "");
  if (kind !== undefined && kind !== "Config") r.problem("kind", '"Config"', kind);

  const named = (key: "clusters" | "users" | "contexts", inner: "cluster" | "user" | "context") => {
    const seen = new Set<string>();
    return r.list(top[key], key).flatMap((item, i) => {
      const field = `${key}[${i}]`;
      const entry = r.object(item, field);
      if (!entry) {
        if (item === null || item === undefined) r.problem(field, `a mapping with \`name\` and \`${inner}\``, item);
        return [];
      }
      const name = f.required(entry, "name", field);
      if (name !== undefined && seen.has(name)) r.problem(`${field}.name`, "a name not defined before in this file", name);
      if (name !== undefined) seen.add(name);
      const body = r.object(entry[inner], `${field}.${inner}`) ?? {};
      return name === undefined ? [] : [{ name, body, origin: { file, field: `${field}.${inner}` } }];
    });
  };

  const clusters = named("clusters", "cluster").map(({ name, body, origin }): ClusterEntry => {
    const at = origin.field;
    return {
      name,
      origin,
      server: f.string(body, "server", at),
      certificateAuthority: path(f.string(body, "certificate-authority", at)),
      certificateAuthorityData: f.base64(body, "certificate-authority-data", at),
      insecureSkipTlsVerify: r.boolean(body["insecure-skip-tls-verify"], `${at}.insecure-skip-tls-verify`),
      tlsServerName: f.string(body, "tls-server-name", at),
      proxyUrl: f.string(body, "proxy-url", at),
      disableCompression: r.boolean(body["disable-compression"], `${at}.disable-compression`),
      extensions: extensions(r, f, body, at),
    };
  });

  const users = named("users", "user").map(({ name, body, origin }): UserEntry => {
    const at = origin.field;
    const provider = r.object(body["auth-provider"], `${at}.auth-provider`);
    return {
      name,
      origin,
      token: f.string(body, "token", at),
      tokenFile: path(f.string(body, "tokenFile", at)),
      clientCertificate: path(f.string(body, "client-certificate", at)),
      clientCertificateData: f.base64(body, "client-certificate-data", at),
      clientKey: path(f.string(body, "client-key", at)),
      clientKeyData: f.base64(body, "client-key-data", at),
      username: f.string(body, "username", at),
      password: f.string(body, "password", at),
      exec: execConfig(r, f, body, at, dir),
      as: f.string(body, "as", at),
      asGroups: f.strings(body, "as-groups", at),
      asUid: f.string(body, "as-uid", at),
      asUserExtra: userExtra(r, f, body, at),
      authProvider: provider ? (typeof provider.name === "string" ? provider.name : "(unnamed)") : undefined,
    };
  });

  const contexts = named("contexts", "context").map(({ name, body, origin }): ContextEntry => ({
    name,
    origin,
    cluster: f.string(body, "cluster", origin.field),
    user: f.string(body, "user", origin.field),
    namespace: f.string(body, "namespace", origin.field),
  }));

  const currentContext = f.string(top, "current-context", "");
  r.throwIfInvalid("CONFIG_INVALID", "client config", file, { details: { file } });
  return { file, clusters, users, contexts, currentContext };
}

const BASE64_RE = /^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/;

type Fields = ReturnType<typeof fields>;

/** The one field reader as this file format reads fields by key: "" is the same as unset, as other clients read it. */
function fields(r: FieldReader) {
  const string = (doc: Doc, key: string, at: string): string | undefined => r.string(doc[key], join(at, key)) || undefined;
  return {
    string,
    required: (doc: Doc, key: string, at: string): string | undefined => {
      const value = string(doc, key, at);
      if (value === undefined && (doc[key] === undefined || doc[key] === null || doc[key] === "")) r.missing(join(at, key));
      return value;
    },
    /** A list of strings; absent stays undefined. */
    strings: (doc: Doc, key: string, at: string): string[] | undefined =>
      doc[key] === undefined || doc[key] === null
        ? undefined
        : r.list(doc[key], join(at, key), (v, p) => (typeof v === "string" ? v : r.problem(p, "a string", v))),
    /** A `*-data` field: base64 of PEM text, decoded; the value is never echoed (it may hold a key). */
    base64: (doc: Doc, key: string, at: string): string | undefined => {
      const value = string(doc, key, at);
      if (value === undefined) return undefined;
      if (!BASE64_RE.test(value.trim())) return r.problem(join(at, key), "base64 of the PEM text", new Shown("text that is not base64"));
      return Buffer.from(value, "base64").toString("utf8");
    },
  };
}

function extensions(r: FieldReader, f: Fields, body: Doc, field: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  r.list(body.extensions, `${field}.extensions`).forEach((item, i) => {
    const at = `${field}.extensions[${i}]`;
    const ext = r.object(item, at);
    const name = ext && f.required(ext, "name", at);
    if (ext && name !== undefined) out[name] = ext.extension;
  });
  return out;
}

function userExtra(r: FieldReader, f: Fields, body: Doc, field: string): Record<string, string[]> | undefined {
  const extra = r.object(body["as-user-extra"], `${field}.as-user-extra`);
  if (!extra) return undefined;
  const out: Record<string, string[]> = {};
  for (const key of Object.keys(extra)) {
    const values = f.strings(extra, key, `${field}.as-user-extra`);
    if (values) out[key] = values;
  }
  return out;
}

function execConfig(r: FieldReader, f: Fields, body: Doc, field: string, dir: string): UserEntry["exec"] {
  const at = `${field}.exec`;
  const exec = r.object(body.exec, at);
  if (!exec) return undefined;
  const apiVersion = f.required(exec, "apiVersion", at);
  const command = f.required(exec, "command", at);
  const env = r.list(exec.env, `${at}.env`).flatMap((item, i) => {
    const ef = `${at}.env[${i}]`;
    const e = r.object(item, ef);
    const name = e && f.required(e, "name", ef);
    if (!e || name === undefined) return [];
    return [{ name, value: f.string(e, "value", ef) ?? "" }];
  });
  const mode = f.string(exec, "interactiveMode", at);
  if (mode !== undefined && !INTERACTIVE_MODES.includes(mode as InteractiveMode)) r.problem(`${at}.interactiveMode`, `one of ${INTERACTIVE_MODES.join(", ")}`, mode);
  if (apiVersion === undefined || command === undefined) return undefined;
  // kubectl's rule: only a command with a path separator is relative to the file; a bare name is looked up on PATH.
  const resolved = !isAbsolute(command) && command.includes("/") ? resolve(dir, command) : command;
  return {
    apiVersion,
    command: resolved,
    args: f.strings(exec, "args", at) ?? [],
    env,
    interactiveMode: (mode as InteractiveMode | undefined) ?? "IfAvailable",
    provideClusterInfo: r.boolean(exec.provideClusterInfo, `${at}.provideClusterInfo`) ?? false,
    installHint: f.string(exec, "installHint", at),
  };
}

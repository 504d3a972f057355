// Admission webhooks from files: the WebhookAdmissionConfiguration of the Validating/MutatingAdmissionWebhook plugins
// and the webhook configuration manifests of its `staticManifestsDir` (admissionregistration.<suffix>/v1), all checked at load.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join as joinPath, resolve } from "node:path";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import type { LabelSelector } from "../api/types/rbac.js";
import { loadClientConfig } from "../client/config-file.js";
import { resolveRestConfig } from "../client/resolve-config.js";
import type { Credentials } from "../client/rest-config.js";
import { compileCondition } from "../cel/index.js";
import { PlatformError } from "../errors.js";
import { FieldReader, join } from "../fields/reader.js";
import { checkHeader, finish, parseConfigText } from "./config-document.js";

export type WebhookPhase = "Mutating" | "Validating";
export const WEBHOOK_OPERATIONS = ["*", "CREATE", "UPDATE", "DELETE", "CONNECT"] as const;

export interface WebhookRule {
  readonly operations: readonly string[];
  readonly apiGroups: readonly string[];
  readonly apiVersions: readonly string[];
  readonly resources: readonly string[];
  readonly scope: "*" | "Cluster" | "Namespaced";
}

/** One compiled condition: true when the webhook is to be called; throws when evaluation fails (the failure policy decides). */
export interface AdmissionMatchCondition {
  readonly name: string;
  readonly expression: string;
  readonly matches: (variables: { readonly object: unknown; readonly oldObject: unknown; readonly request: unknown }) => boolean;
}

export interface AdmissionWebhook {
  /** Unique within its phase; prefixes its audit annotations; named in denials. */
  readonly name: string;
  /** The configuration object that holds it (for messages), and its `metadata.name` (for audit annotations). */
  readonly configuration: string;
  readonly configurationName: string;
  readonly url: string;
  /** PEM CA certificates from `clientConfig.caBundle`; system roots when absent. */
  readonly caBundle?: string;
  readonly rules: readonly WebhookRule[];
  readonly failurePolicy: "Fail" | "Ignore";
  readonly matchPolicy: "Exact" | "Equivalent";
  readonly namespaceSelector: LabelSelector;
  readonly objectSelector: LabelSelector;
  readonly sideEffects: "None" | "NoneOnDryRun";
  readonly timeoutSeconds: number;
  readonly reinvocationPolicy: "Never" | "IfNeeded";
  /** All true → called; any false → skipped (upstream's matchConditions, CEL over object, oldObject and request). */
  readonly matchConditions: readonly AdmissionMatchCondition[];
  /** From the `kubeConfigFile` user entry named for the webhook's host, when there is one. */
  readonly credentials?: Credentials;
  readonly clientCert?: { readonly cert: string; readonly key: string };
}

export interface WebhookAdmissionConfig {
  readonly kubeConfigFile?: string;
  readonly staticManifestsDir?: string;
  readonly webhooks: readonly AdmissionWebhook[];
}

/** Upstream's default and ceiling of `timeoutSeconds`. */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;
export const MAX_WEBHOOK_TIMEOUT_SECONDS = 30;
export const MAX_MATCH_CONDITIONS = 64;

const CONFIG_KINDS = ["WebhookAdmissionConfiguration", "WebhookAdmission"];
const WEBHOOK_FIELDS = ["name", "clientConfig", "rules", "failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector", "sideEffects", "timeoutSeconds", "admissionReviewVersions", "reinvocationPolicy", "matchConditions"];
const MANIFEST_EXTENSIONS = [".yaml", ".yml", ".json"];

export function admissionRegistrationApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  return `admissionregistration.${groupNames(groupSuffix).suffix}/v1`;
}

/** Reads the plugin's WebhookAdmissionConfiguration (inline or from `path`) and every manifest of its directory. */
export function webhookConfigReader(phase: WebhookPhase) {
  return (doc: unknown, at: string, r: FieldReader, groupSuffix?: string): WebhookAdmissionConfig => {
    const suffix = groupNames(groupSuffix).suffix;
    const raw = r.object(doc, at, ["apiVersion", "kind", "kubeConfigFile", "staticManifestsDir"]);
    if (!raw) return { webhooks: r.missing(at, "to be a WebhookAdmissionConfiguration") ?? [] };
    // Upstream's earlier kind name, WebhookAdmission, is read too.
    const kind = CONFIG_KINDS.includes(raw.kind as string) ? (raw.kind as string) : CONFIG_KINDS[0]!;
    checkHeader(raw, { apiVersion: [`apiserver.config.${suffix}/v1`, `apiserver.${suffix}/v1alpha1`], kind }, r, at);
    const kubeConfigFile = r.string(raw.kubeConfigFile, join(at, "kubeConfigFile")) || undefined;
    const dir = r.string(raw.staticManifestsDir, join(at, "staticManifestsDir"));
    if (dir === undefined || dir === "") return { ...(kubeConfigFile && { kubeConfigFile }), webhooks: [] };
    if (!isAbsolute(dir)) return { webhooks: r.problem(join(at, "staticManifestsDir"), "an absolute path", dir) ?? [] };
    let files: string[];
    try {
      if (!statSync(dir).isDirectory()) return { webhooks: r.problem(join(at, "staticManifestsDir"), "a directory", dir) ?? [] };
      files = readdirSync(dir).filter((f) => MANIFEST_EXTENSIONS.some((e) => f.endsWith(e))).sort();
    } catch (err) {
      return { webhooks: r.problem(join(at, "staticManifestsDir"), `a readable directory (${(err as NodeJS.ErrnoException).code})`, dir) ?? [] };
    }
    // Each manifest is checked on its own, its problems naming its file; the first bad one stops the load.
    const webhooks: AdmissionWebhook[] = [];
    const configNames = new Map<string, string>();
    for (const f of files) {
      const file = joinPath(dir, f);
      const read = readManifest(readText(file), file, phase, suffix);
      const earlier = configNames.get(read.name);
      if (earlier) throw new PlatformError("CONFIG_INVALID", `invalid webhook manifest ${file}: metadata.name ${JSON.stringify(read.name)} is also the name of ${earlier}`);
      configNames.set(read.name, file);
      for (const w of read.webhooks) {
        const same = webhooks.find((o) => o.name === w.name);
        if (same) throw new PlatformError("CONFIG_INVALID", `invalid webhook manifest ${file}: webhook name ${JSON.stringify(w.name)} is also used in ${same.configuration}`);
        webhooks.push(w);
      }
    }
    return { ...(kubeConfigFile && { kubeConfigFile }), staticManifestsDir: dir, webhooks };
  };
}

/**
 * Upstream's credentials for webhooks: the `kubeConfigFile` user named `host:port`, else `host`, else `*.<parent
 * domain>` (nearest first), else `*`; a webhook no user names is called without credentials.
 */
export async function resolveWebhookCredentials(config: WebhookAdmissionConfig, source: string, groupSuffix?: string): Promise<WebhookAdmissionConfig> {
  if (!config.kubeConfigFile) return config;
  const path = resolve(dirname(source), config.kubeConfigFile);
  const fail = (why: string, cause?: unknown) => new PlatformError("CONFIG_INVALID", `invalid webhook kubeConfigFile ${path}: ${why}`, { cause });
  let file;
  try {
    file = await loadClientConfig({ explicitPath: path });
  } catch (err) {
    throw fail((err as Error).message, err);
  }
  const webhooks: AdmissionWebhook[] = [];
  for (const w of config.webhooks) {
    const url = new URL(w.url);
    const labels = url.hostname.split(".");
    const candidates = [url.host, url.hostname, ...labels.slice(1).map((_, i) => `*.${labels.slice(i + 1).join(".")}`), "*"];
    const user = candidates.find((name) => file.users.has(name));
    if (user === undefined) {
      webhooks.push(w);
      continue;
    }
    let rest;
    try {
      rest = await resolveRestConfig(file, { user, server: w.url }, { ...(groupSuffix && { groupSuffix }) });
    } catch (err) {
      throw fail(`user ${JSON.stringify(user)} (for webhook ${JSON.stringify(w.name)}): ${(err as Error).message}`, err);
    }
    if (rest.credentials.type === "exec") throw fail(`user ${JSON.stringify(user)}: an exec credential plugin is not offered for webhooks: use a token, a token file or a client certificate`);
    webhooks.push({ ...w, credentials: rest.credentials, ...(rest.tls.cert && rest.tls.key && { clientCert: { cert: rest.tls.cert, key: rest.tls.key } }) });
  }
  return { ...config, webhooks };
}

function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read webhook manifest ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

/** One `<Phase>WebhookConfiguration` manifest; its name must end in `.static.<suffix>`, as upstream reserves it for files. */
export function readManifest(text: string, file: string, phase: WebhookPhase, suffix: string): { name: string; webhooks: AdmissionWebhook[] } {
  const what = "webhook manifest";
  const doc = parseConfigText(text, file, what);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: admissionRegistrationApiVersion(suffix), kind: `${phase}WebhookConfiguration` }, r);
  for (const key of Object.keys(doc)) if (!["apiVersion", "kind", "metadata", "webhooks"].includes(key)) r.unknownField("", key, ["apiVersion", "kind", "metadata", "webhooks"]);
  const meta = r.object(doc.metadata, "metadata");
  const name = r.string(meta?.name, "metadata.name", { nonEmpty: true }) ?? "";
  if (meta?.name === undefined) r.missing("metadata.name");
  else if (name && !name.endsWith(`.static.${suffix}`)) r.problem("metadata.name", `to end in ".static.${suffix}" (reserved for webhooks loaded from files)`, name);
  const configuration = `${phase}WebhookConfiguration ${JSON.stringify(name)} (${file})`;
  const webhooks = r.list(doc.webhooks, "webhooks", (v, at) => readWebhook(v, at, r, phase, configuration, name));
  const seen = new Set<string>();
  webhooks.forEach((w, i) => {
    if (seen.has(w.name)) r.problem(`webhooks[${i}].name`, "to be unique in the configuration", w.name);
    seen.add(w.name);
  });
  finish(r, { strict: true }, what, file);
  return { name, webhooks };
}

function readWebhook(value: unknown, at: string, r: FieldReader, phase: WebhookPhase, configuration: string, configurationName: string): AdmissionWebhook | undefined {
  const raw = r.object(value, at, phase === "Mutating" ? WEBHOOK_FIELDS : WEBHOOK_FIELDS.filter((f) => f !== "reinvocationPolicy"));
  if (!raw) return r.missing(at, "to be a webhook");
  const name = required(raw.name, join(at, "name"), r, "a fully qualified name such as policy.example.com") ?? "";
  // Upstream: a fully qualified name, at least three dot-separated segments.
  if (name && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){2,}$/.test(name)) r.problem(join(at, "name"), "a domain name with at least three segments separated by dots", name);
  const versions = raw.admissionReviewVersions === undefined ? (r.missing(join(at, "admissionReviewVersions"), 'to list "v1"'), []) : r.strings(raw.admissionReviewVersions, join(at, "admissionReviewVersions"));
  if (versions.length > 0 && !versions.includes("v1")) r.problem(join(at, "admissionReviewVersions"), 'to include "v1" (the only AdmissionReview version sent)', versions);
  const sideEffects = raw.sideEffects === undefined || raw.sideEffects === null
    ? (r.missing(join(at, "sideEffects"), "to be None or NoneOnDryRun"), "None")
    : r.oneOf(raw.sideEffects, join(at, "sideEffects"), ["None", "NoneOnDryRun"] as const, "None");
  const timeoutSeconds = r.integer(raw.timeoutSeconds, join(at, "timeoutSeconds"), { min: 1, max: MAX_WEBHOOK_TIMEOUT_SECONDS }) ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS;
  const client = readClientConfig(raw.clientConfig, join(at, "clientConfig"), r);
  return {
    name,
    configuration,
    configurationName,
    url: client.url,
    ...(client.caBundle !== undefined && { caBundle: client.caBundle }),
    rules: r.list(raw.rules, join(at, "rules"), (v, p) => readRule(v, p, r)),
    failurePolicy: r.oneOf(raw.failurePolicy, join(at, "failurePolicy"), ["Fail", "Ignore"] as const, "Fail"),
    matchPolicy: r.oneOf(raw.matchPolicy, join(at, "matchPolicy"), ["Exact", "Equivalent"] as const, "Equivalent"),
    namespaceSelector: readSelector(raw.namespaceSelector, join(at, "namespaceSelector"), r),
    objectSelector: readSelector(raw.objectSelector, join(at, "objectSelector"), r),
    sideEffects,
    timeoutSeconds,
    reinvocationPolicy: r.oneOf(raw.reinvocationPolicy, join(at, "reinvocationPolicy"), ["Never", "IfNeeded"] as const, "Never"),
    matchConditions: readMatchConditions(raw.matchConditions, join(at, "matchConditions"), r),
  };
}

/** Upstream's rules: at most 64, each a unique qualified name and a CEL expression that compiles to a bool. */
function readMatchConditions(value: unknown, at: string, r: FieldReader): AdmissionMatchCondition[] {
  const items = r.list(value, at);
  if (items.length > MAX_MATCH_CONDITIONS) return r.problem(at, `to have at most ${MAX_MATCH_CONDITIONS} items (got ${items.length})`, value) ?? [];
  const names = new Set<string>();
  return r.list(value, at, (item, p) => {
    const raw = r.object(item, p, ["name", "expression"]);
    if (!raw) return r.missing(p, "to be a match condition with a name and an expression");
    const name = required(raw.name, join(p, "name"), r, "a qualified name such as exclude-leases") ?? "";
    if (name && !/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(name)) {
      r.problem(join(p, "name"), "a qualified name (an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.')", name);
    } else if (names.has(name)) r.problem(join(p, "name"), "to be unique (Duplicate value)", name);
    names.add(name);
    const expression = required(raw.expression, join(p, "expression"), r, "a CEL expression");
    if (!expression || !name) return undefined;
    try {
      return { name, expression, matches: compileCondition(expression, "admission") };
    } catch (err) {
      return r.problem(join(p, "expression"), `a CEL expression that compiles (${(err as Error).message})`, expression);
    }
  });
}

function required(value: unknown, path: string, r: FieldReader, what: string): string | undefined {
  if (value === undefined || value === null || value === "") return r.missing(path, `to be ${what}`);
  return r.string(value, path);
}

function readClientConfig(value: unknown, at: string, r: FieldReader): { url: string; caBundle?: string } {
  const raw = r.object(value, at, ["url", "service", "caBundle"]);
  if (!raw) return { url: r.missing(at, "to give the webhook's url") ?? "" };
  if (raw.service !== undefined && raw.service !== null) r.problem(join(at, "service"), "to be unset: this server has no Services to route to; give `url` instead", raw.service);
  const url = required(raw.url, join(at, "url"), r, "an https:// URL") ?? "";
  if (url) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      r.problem(join(at, "url"), "an absolute https:// URL", url);
    }
    // As upstream: https only, and no user info, query or fragment.
    if (parsed && (parsed.protocol !== "https:" || parsed.username || parsed.password || parsed.search || parsed.hash)) r.problem(join(at, "url"), "an https:// URL without user info, query or fragment", url);
  }
  const bundle = r.string(raw.caBundle, join(at, "caBundle"));
  if (!bundle) return { url };
  const pem = Buffer.from(bundle, "base64").toString("utf8");
  if (!pem.includes("-----BEGIN CERTIFICATE-----")) {
    r.problem(join(at, "caBundle"), "base64 of PEM CA certificates", `${bundle.slice(0, 20)}…`);
    return { url };
  }
  return { url, caBundle: pem };
}

function readRule(value: unknown, at: string, r: FieldReader): WebhookRule | undefined {
  const raw = r.object(value, at, ["operations", "apiGroups", "apiVersions", "resources", "scope"]);
  if (!raw) return r.missing(at, "to be a rule");
  const list = (key: string, check?: (s: string) => string | undefined): string[] => {
    if (raw[key] === undefined || raw[key] === null) return r.missing(join(at, key), `to list ${key} ("*" for all)`) ?? [];
    return r.list(raw[key], join(at, key), (v, p) => (typeof v === "string" ? (check?.(v) === undefined ? v : r.problem(p, check(v)!, v)) : r.problem(p, "a string", v)));
  };
  return {
    operations: list("operations", (s) => ((WEBHOOK_OPERATIONS as readonly string[]).includes(s) ? undefined : `one of ${WEBHOOK_OPERATIONS.join(", ")}`)),
    apiGroups: list("apiGroups"),
    apiVersions: list("apiVersions"),
    resources: list("resources", (s) => (s === "" ? "a resource, resource/subresource or *" : undefined)),
    scope: r.oneOf(raw.scope, join(at, "scope"), ["*", "Cluster", "Namespaced"] as const, "*"),
  };
}

const SELECTOR_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"] as const;

function readSelector(value: unknown, at: string, r: FieldReader): LabelSelector {
  const raw = r.object(value, at, ["matchLabels", "matchExpressions"]);
  if (!raw) return {};
  const labels = r.object(raw.matchLabels, join(at, "matchLabels"));
  const matchLabels: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels ?? {})) if (r.string(v, join(join(at, "matchLabels"), k)) !== undefined) matchLabels[k] = v as string;
  const matchExpressions = r.list(raw.matchExpressions, join(at, "matchExpressions"), (v, p) => {
    const e = r.object(v, p, ["key", "operator", "values"]);
    if (!e) return undefined;
    const key = required(e.key, join(p, "key"), r, "a label key") ?? "";
    const operator = r.oneOf(e.operator, join(p, "operator"), SELECTOR_OPERATORS, "Exists");
    const values = r.strings(e.values, join(p, "values"));
    if ((operator === "In" || operator === "NotIn") && values.length === 0) r.missing(join(p, "values"), `to list values for ${operator}`);
    return { key, operator, values };
  });
  return { matchLabels, matchExpressions };
}

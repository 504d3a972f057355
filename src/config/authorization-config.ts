// AuthorizationConfiguration (apiserver.config.<suffix>/v1, apiserver.<suffix>/v1beta1 and v1alpha1): the ordered
// authorizer chain, RBAC and Webhook authorizers, checked with upstream's validation rules and field-named messages.
import { stat } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { compileCondition } from "../cel/index.js";
import { dns1123LabelProblem } from "../api/names.js";
import { FieldReader, join } from "../fields/reader.js";
import { formatDuration } from "../fields/duration.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";

export const AUTHORIZATION_CONFIG_KIND = "AuthorizationConfiguration";
const WHAT = "authorization configuration";

/** The authorizer types this server offers (upstream also has Node, which decides from Node and Pod objects). */
export const AUTHORIZER_TYPES = ["RBAC", "Webhook", "AlwaysAllow", "AlwaysDeny"] as const;
export type AuthorizerType = (typeof AUTHORIZER_TYPES)[number];
/** Types that may appear more than once, as upstream: only webhooks. */
const REPEATABLE: readonly string[] = ["Webhook"];
export const FAILURE_POLICIES = ["NoOpinion", "Deny"] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];
export const SAR_VERSIONS = ["v1", "v1beta1"] as const;
export type SubjectAccessReviewVersion = (typeof SAR_VERSIONS)[number];
const CONNECTION_TYPES = ["InClusterConfig", "KubeConfigFile"] as const;
export const MAX_MATCH_CONDITIONS = 64;
const MAX_TIMEOUT_MS = 30_000;

/**
 * One compiled match condition over the SubjectAccessReview v1 spec (upstream's CEL variable `request`): true → the
 * webhook is asked; false → no opinion; a throw → the failure policy.
 */
export type MatchCondition = (request: Readonly<Record<string, unknown>>) => boolean;
/** Compiles a CEL expression with `request` (SubjectAccessReviewSpec v1) declared; throws with a message naming what is wrong. */
export type CompileMatchCondition = (expression: string) => MatchCondition;

export interface WebhookAuthorizerConfig {
  readonly authorizedTTLMs: number;
  readonly unauthorizedTTLMs: number;
  readonly cacheAuthorizedRequests: boolean;
  readonly cacheUnauthorizedRequests: boolean;
  readonly timeoutMs: number;
  readonly subjectAccessReviewVersion: SubjectAccessReviewVersion;
  readonly failurePolicy: FailurePolicy;
  /** The client config file of the webhook (absolute, a regular file when loaded). */
  readonly kubeConfigFile: string;
  readonly matchConditions: readonly { readonly expression: string; readonly matches: MatchCondition }[];
}

export type AuthorizerConfig =
  | { readonly type: Exclude<AuthorizerType, "Webhook">; readonly name: string }
  | { readonly type: "Webhook"; readonly name: string; readonly webhook: WebhookAuthorizerConfig };

export interface LoadedAuthorizationConfig {
  readonly source: string;
  readonly authorizers: readonly AuthorizerConfig[];
}

export interface AuthorizationConfigOptions extends ConfigLoadOptions {
  /** How matchConditions are compiled (default: CEL with `request` declared as the SubjectAccessReview v1 spec). */
  readonly compileMatchCondition?: CompileMatchCondition;
}

/** CEL over the SubjectAccessReview v1 spec, as upstream's variable `request`; throws CEL_INVALID with the position. */
export const compileSubjectAccessReviewCondition: CompileMatchCondition = (expression) => {
  const condition = compileCondition(expression, "subjectAccessReview");
  return (request) => condition({ request });
};

/** v1 under `apiserver.config.<suffix>`, v1beta1 and v1alpha1 under `apiserver.<suffix>`, as upstream serves the kind. */
export function authorizationConfigApiVersions(groupSuffix: string = DEFAULT_GROUP_SUFFIX): readonly string[] {
  const suffix = groupNames(groupSuffix).suffix;
  return [`apiserver.config.${suffix}/v1`, `apiserver.${suffix}/v1beta1`, `apiserver.${suffix}/v1alpha1`];
}

const AUTHORIZER_FIELDS = ["type", "name", "webhook"];
const WEBHOOK_FIELDS = ["authorizedTTL", "cacheAuthorizedRequests", "unauthorizedTTL", "cacheUnauthorizedRequests", "timeout", "subjectAccessReviewVersion", "matchConditionSubjectAccessReviewVersion", "failurePolicy", "connectionInfo", "matchConditions"];
const supported = (values: readonly string[]): string => `one of ${values.map((v) => JSON.stringify(v)).join(", ")}`;

/** A required duration > 0 (`max` ms at most when given), upstream's "Required value" for 0 or absent. */
function positiveDuration(r: FieldReader, value: unknown, path: string, max?: number): number | undefined {
  const ms = r.duration(value, path, {});
  if (ms === undefined) return value === undefined || value === null ? r.missing(path) : undefined;
  // Zero is upstream's "Required value" (no default applies); said as the range, since the user did write something.
  if (ms <= 0 || (max !== undefined && ms > max)) return r.problem(path, max === undefined ? "to be > 0s" : `to be > 0s and <= ${formatDuration(max)}`, value);
  return ms;
}

function readMatchConditions(r: FieldReader, value: unknown, at: string, compile: CompileMatchCondition): WebhookAuthorizerConfig["matchConditions"] {
  const path = join(at, "matchConditions");
  const items = r.list(value, path);
  if (items.length > MAX_MATCH_CONDITIONS) return r.problem(path, `to have at most ${MAX_MATCH_CONDITIONS} items (got ${items.length})`, value) ?? [];
  const seen = new Set<string>();
  const out: { expression: string; matches: MatchCondition }[] = [];
  items.forEach((item, i) => {
    const raw = r.object(item, `${path}[${i}]`, ["expression"]);
    const exprPath = `${path}[${i}].expression`;
    const expression = r.string(raw?.expression, exprPath);
    if (expression === undefined || expression.trim() === "") {
      if (expression !== undefined || raw?.expression === undefined || raw?.expression === null) r.missing(exprPath, "to be a CEL expression");
      return;
    }
    if (seen.has(expression)) return r.problem(exprPath, "to be unique (Duplicate value)", expression);
    seen.add(expression);
    try {
      out.push({ expression, matches: compile(expression) });
    } catch (err) {
      r.problem(exprPath, `a CEL expression that compiles (${(err as Error).message})`, expression);
    }
  });
  return out;
}

async function readConnection(r: FieldReader, value: unknown, at: string): Promise<string | undefined> {
  const path = join(at, "connectionInfo");
  const raw = r.object(value, path, ["type", "kubeConfigFile"]) ?? {};
  const type = r.string(raw.type, join(path, "type"));
  const filePath = join(path, "kubeConfigFile");
  const file = r.string(raw.kubeConfigFile, filePath);
  if (!type) return r.missing(join(path, "type"), `to be ${supported(CONNECTION_TYPES)}`);
  if (type === "InClusterConfig") {
    if (raw.kubeConfigFile !== undefined && raw.kubeConfigFile !== null) return r.problem(filePath, "to be unset: it can only be set when type=KubeConfigFile", raw.kubeConfigFile);
    // This server runs beside the cluster, not in it: there is no in-cluster service account to call the webhook as.
    return r.problem(join(path, "type"), "KubeConfigFile: InClusterConfig is not offered (the server does not run in a cluster)", type);
  }
  if (type !== "KubeConfigFile") return r.problem(join(path, "type"), supported(CONNECTION_TYPES), type);
  if (!file) return r.missing(filePath, "to be the absolute path of a client config file (required when type=KubeConfigFile)");
  if (!isAbsolute(file)) return r.problem(filePath, "to be an absolute path", file);
  try {
    if (!(await stat(file)).isFile()) return r.problem(filePath, "to be a regular file", file);
  } catch (err) {
    return r.problem(filePath, `to be a readable file (error loading file: ${(err as NodeJS.ErrnoException).code ?? String(err)})`, file);
  }
  return file;
}

async function readWebhook(r: FieldReader, value: unknown, at: string, o: AuthorizationConfigOptions): Promise<WebhookAuthorizerConfig | undefined> {
  const w = r.object(value, at, WEBHOOK_FIELDS);
  if (!w) return r.missing(at, "to be set (required when type=Webhook)");
  const timeoutMs = positiveDuration(r, w.timeout, join(at, "timeout"), MAX_TIMEOUT_MS);
  const authorizedTTLMs = positiveDuration(r, w.authorizedTTL, join(at, "authorizedTTL"));
  const unauthorizedTTLMs = positiveDuration(r, w.unauthorizedTTL, join(at, "unauthorizedTTL"));
  const sarPath = join(at, "subjectAccessReviewVersion");
  const version = w.subjectAccessReviewVersion === undefined || w.subjectAccessReviewVersion === "" ? r.missing(sarPath, `to be ${supported(SAR_VERSIONS)}`) : r.oneOf(w.subjectAccessReviewVersion, sarPath, SAR_VERSIONS, "v1");
  const conditions = r.list(w.matchConditions, join(at, "matchConditions"));
  const mcPath = join(at, "matchConditionSubjectAccessReviewVersion");
  if (w.matchConditionSubjectAccessReviewVersion === undefined || w.matchConditionSubjectAccessReviewVersion === "") {
    if (conditions.length > 0) r.missing(mcPath, 'to be "v1" (required if match conditions are specified)');
  } else if (w.matchConditionSubjectAccessReviewVersion !== "v1") {
    r.problem(mcPath, 'to be "v1"', w.matchConditionSubjectAccessReviewVersion);
  }
  const fpPath = join(at, "failurePolicy");
  const failurePolicy = w.failurePolicy === undefined || w.failurePolicy === "" ? r.missing(fpPath, `to be ${supported(FAILURE_POLICIES)}`) : r.oneOf(w.failurePolicy, fpPath, FAILURE_POLICIES, "Deny");
  const kubeConfigFile = await readConnection(r, w.connectionInfo, at);
  const matchConditions = readMatchConditions(r, w.matchConditions, at, o.compileMatchCondition ?? compileSubjectAccessReviewCondition);
  const cacheAuthorizedRequests = r.boolean(w.cacheAuthorizedRequests, join(at, "cacheAuthorizedRequests"), true);
  const cacheUnauthorizedRequests = r.boolean(w.cacheUnauthorizedRequests, join(at, "cacheUnauthorizedRequests"), true);
  if (timeoutMs === undefined || authorizedTTLMs === undefined || unauthorizedTTLMs === undefined || version === undefined || failurePolicy === undefined || kubeConfigFile === undefined) return undefined;
  return { authorizedTTLMs, unauthorizedTTLMs, cacheAuthorizedRequests, cacheUnauthorizedRequests, timeoutMs, subjectAccessReviewVersion: version, failurePolicy, kubeConfigFile, matchConditions };
}

async function readAuthorizers(doc: Record<string, unknown>, r: FieldReader, o: AuthorizationConfigOptions): Promise<AuthorizerConfig[]> {
  const items = r.list(doc.authorizers, "authorizers");
  const none = Array.isArray(doc.authorizers) ? doc.authorizers.length === 0 : doc.authorizers === undefined || doc.authorizers === null;
  if (none) r.missing("authorizers", "to list at least one authorizer (at least one authorization mode must be defined)");
  const types = new Set<string>();
  const names = new Map<string, string>();
  const out: AuthorizerConfig[] = [];
  for (const [i, item] of items.entries()) {
    const at = `authorizers[${i}]`;
    const a = r.object(item, at, AUTHORIZER_FIELDS);
    if (!a) {
      r.missing(at, "to be an authorizer with a type and a name");
      continue;
    }
    const type = r.string(a.type, join(at, "type"));
    if (!type) {
      r.missing(join(at, "type"), `to be ${supported(AUTHORIZER_TYPES)}`);
      continue;
    }
    if (!(AUTHORIZER_TYPES as readonly string[]).includes(type)) {
      r.problem(join(at, "type"), supported(AUTHORIZER_TYPES), type);
      continue;
    }
    if (types.has(type) && !REPEATABLE.includes(type)) {
      r.problem(join(at, "type"), `to appear once (Duplicate value): only Webhook authorizers may be repeated`, type);
      continue;
    }
    types.add(type);
    const name = r.string(a.name, join(at, "name"));
    if (!name) r.missing(join(at, "name"), "to be a DNS label naming the authorizer in metrics and audit");
    else if (names.has(name)) r.problem(join(at, "name"), `to be unique (Duplicate value; also \`${names.get(name)}.name\`)`, name);
    else {
      const bad = dns1123LabelProblem(name);
      if (bad) r.problem(join(at, "name"), `to be a valid authorizer name: ${bad}`, name);
    }
    if (name) names.set(name, at);
    if (type === "Webhook") {
      const webhook = await readWebhook(r, a.webhook, join(at, "webhook"), o);
      if (webhook && name) out.push({ type, name, webhook });
    } else {
      if (a.webhook !== undefined && a.webhook !== null) r.problem(join(at, "webhook"), "to be unset: it may only be specified when type=Webhook", a.webhook);
      if (name) out.push({ type: type as Exclude<AuthorizerType, "Webhook">, name });
    }
  }
  return out;
}

/** Reads and checks the whole document; any problem refuses all of it (nothing is half-loaded). */
export async function parseAuthorizationConfig(text: string, source: string, options: AuthorizationConfigOptions = {}): Promise<LoadedAuthorizationConfig> {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: authorizationConfigApiVersions(options.groupSuffix), kind: AUTHORIZATION_CONFIG_KIND }, r);
  for (const key of Object.keys(doc)) if (!["apiVersion", "kind", "authorizers"].includes(key)) r.unknownField("", key, ["apiVersion", "kind", "authorizers"]);
  const authorizers = await readAuthorizers(doc, r, options);
  // Unknown fields are errors: a misspelt `failurePolicy` would silently change what an outage decides.
  finish(r, { ...options, strict: options.strict ?? true }, WHAT, source);
  return { source, authorizers };
}

export async function loadAuthorizationConfig(path: string, options: AuthorizationConfigOptions = {}): Promise<LoadedAuthorizationConfig> {
  return parseAuthorizationConfig(await readConfigFile(path, WHAT), path, options);
}

// AuthenticationConfiguration (apiserver.config.<suffix>/v1, v1beta1, v1alpha1): JWT authenticators and anonymous access, every rule checked at load.
import { X509Certificate } from "node:crypto";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { dns1123SubdomainProblem } from "../api/names.js";
import { compileCel, type CelProgram, type CelResult, type CelVariableSet } from "../cel/index.js";
import { PlatformError } from "../errors.js";
import { FieldReader, Shown } from "../fields/reader.js";
import { list, object, opaque, text, type Field, type Value } from "../fields/schema.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";

export const AUTHENTICATION_CONFIG_KIND = "AuthenticationConfiguration";
const WHAT = "authentication configuration";
/** As upstream: more would make every bearer token try too many issuers. */
export const MAX_JWT_AUTHENTICATORS = 64;
export const AUDIENCE_MATCH_POLICIES = ["MatchAny"] as const;
export const EGRESS_SELECTOR_TYPES = ["controlplane", "cluster"] as const;

/** v1 in the config group; v1beta1 and v1alpha1 in the seed's group and, as upstream spells them, in the config group. */
export function authenticationConfigApiVersions(groupSuffix: string = DEFAULT_GROUP_SUFFIX): readonly string[] {
  const suffix = groupNames(groupSuffix).suffix;
  return [`apiserver.config.${suffix}/v1`, `apiserver.${suffix}/v1beta1`, `apiserver.${suffix}/v1alpha1`, `apiserver.config.${suffix}/v1beta1`, `apiserver.config.${suffix}/v1alpha1`];
}

/** A string that may be absent: `prefix: ""` is a value, a missing prefix is not. */
const maybe = (): Field<string | undefined> => ({ read: (v, path, r) => r.string(v, path) });

const claimOrExpression = object({ claim: maybe(), prefix: maybe(), expression: maybe() });
const issuerShape = object({ url: maybe(), discoveryURL: maybe(), certificateAuthority: maybe(), audiences: list(text()), audienceMatchPolicy: maybe(), egressSelectorType: maybe() });
const jwtShape = object({
  issuer: issuerShape,
  claimValidationRules: list(object({ claim: maybe(), requiredValue: maybe(), expression: maybe(), message: maybe() })),
  claimMappings: object({ username: claimOrExpression, groups: claimOrExpression, uid: claimOrExpression, extra: list(object({ key: maybe(), valueExpression: maybe() })) }),
  userValidationRules: list(object({ expression: maybe(), message: maybe() })),
});
const configShape = object({ jwt: list(jwtShape), anonymous: opaque() }, ["apiVersion", "kind"]);
const anonymousShape = object({ enabled: opaque(), conditions: list(object({ path: maybe() })) });

/** A claim or a compiled expression: how one user field is mapped. */
export type ClaimSource = { readonly claim: string; readonly prefix: string } | { readonly expression: CelProgram };

export interface JwtAuthenticatorConfig {
  readonly issuer: {
    readonly url: string;
    readonly discoveryURL?: string;
    readonly certificateAuthority?: string;
    readonly audiences: readonly string[];
    readonly egressSelectorType?: (typeof EGRESS_SELECTOR_TYPES)[number];
  };
  readonly claimValidationRules: readonly ({ readonly claim: string; readonly requiredValue: string } | { readonly expression: CelProgram; readonly message?: string })[];
  readonly claimMappings: {
    readonly username: ClaimSource;
    readonly groups?: ClaimSource;
    readonly uid?: { readonly claim: string } | { readonly expression: CelProgram };
    readonly extra: readonly { readonly key: string; readonly valueExpression: CelProgram }[];
  };
  readonly userValidationRules: readonly { readonly expression: CelProgram; readonly message?: string }[];
}

export interface AnonymousConfig {
  readonly enabled: boolean;
  /** Paths anonymous requests may reach; empty: any path. */
  readonly conditions: readonly string[];
}

export interface LoadedAuthenticationConfig {
  readonly source: string;
  readonly jwt: readonly JwtAuthenticatorConfig[];
  readonly anonymous?: AnonymousConfig;
  readonly warnings: readonly string[];
}

/** Compiles one expression, recording its problem at `path` ("… at line 1, column 4") instead of throwing. */
function cel(expression: string, path: string, set: CelVariableSet, result: CelResult, r: FieldReader): CelProgram | undefined {
  try {
    return compileCel(expression, set, result);
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    return r.problem(path, `a CEL expression that compiles (${err.message})`, expression);
  }
}

function httpsURL(value: string, path: string, r: FieldReader): void {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    r.problem(path, "a URL", value);
    return;
  }
  if (u.protocol !== "https:") r.problem(path, "an https:// URL", value);
  else if (u.username || u.password) r.problem(path, "a URL without user information", value);
  else if (u.search || value.includes("?")) r.problem(path, "a URL without a query", value);
  else if (u.hash || value.includes("#")) r.problem(path, "a URL without a fragment", value);
}

const trimSlash = (s: string): string => s.replace(/\/+$/, "");

/** The mapping of one user field: `claim` (with `prefix` when `prefixed`) XOR `expression`. */
function mapping(m: Value<typeof claimOrExpression>, at: string, kind: "username" | "groups" | "uid", required: boolean, r: FieldReader): ClaimSource | { claim: string } | undefined {
  const prefixed = kind !== "uid";
  const result: CelResult = kind === "groups" ? "string or list of strings" : "string";
  if (!prefixed && m.prefix !== undefined) r.unknownField(at, "prefix", ["claim", "expression"]);
  if (m.claim !== undefined && m.claim !== "" && m.expression !== undefined && m.expression !== "") {
    r.problem(`${at}.expression`, "not to be set together with `claim` (they are mutually exclusive)", m.expression);
    return undefined;
  }
  if (m.expression) {
    if (m.prefix !== undefined && prefixed) r.problem(`${at}.prefix`, "not to be set with `expression` (write the prefix in the expression)", m.prefix);
    const program = cel(m.expression, `${at}.expression`, "claims", result, r);
    return program && { expression: program };
  }
  if (m.claim) {
    if (!prefixed) return { claim: m.claim };
    if (m.prefix === undefined) return r.missing(`${at}.prefix`, `to be set when \`claim\` is set (it may be "")`);
    return { claim: m.claim, prefix: m.prefix };
  }
  if (required) r.missing(kind === "username" ? `${at}.claim` : at, "or `expression` to be set (one of the two)");
  else if (prefixed && m.prefix !== undefined) r.problem(`${at}.prefix`, "to be set only with `claim`", m.prefix);
  return undefined;
}

function extraKeyProblem(key: string, suffix: string): string | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0 || slash === key.length - 1) return "a domain-prefixed path such as example.org/team";
  const domain = key.slice(0, slash);
  if (dns1123SubdomainProblem(domain)) return "a domain-prefixed path whose domain is a DNS subdomain";
  if (!/^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]+$/.test(key.slice(slash + 1))) return "a domain-prefixed path whose path has only URL path characters";
  if (key !== key.toLowerCase()) return "lower case";
  for (const reserved of [suffix, "k8s.io", "kubernetes.io"]) {
    if (domain === reserved || domain.endsWith(`.${reserved}`)) return `a key outside the reserved domain ${reserved} and its subdomains`;
  }
  return undefined;
}

function readJwt(a: Value<typeof jwtShape>, at: string, suffix: string, r: FieldReader): JwtAuthenticatorConfig | undefined {
  const errorsBefore = r.errors.length;
  const is = a.issuer;
  if (!is.url) r.missing(`${at}.issuer.url`, "to be an https:// URL");
  else httpsURL(is.url, `${at}.issuer.url`, r);
  if (is.discoveryURL !== undefined) {
    httpsURL(is.discoveryURL, `${at}.issuer.discoveryURL`, r);
    if (is.url && trimSlash(is.discoveryURL) === trimSlash(is.url)) r.problem(`${at}.issuer.discoveryURL`, "to differ from `issuer.url`", is.discoveryURL);
  }
  if (is.certificateAuthority !== undefined) caProblem(is.certificateAuthority, `${at}.issuer.certificateAuthority`, r);
  if (is.audiences.length === 0) r.missing(`${at}.issuer.audiences`, "to list at least one audience");
  is.audiences.forEach((aud, i) => {
    if (aud === "") r.problem(`${at}.issuer.audiences[${i}]`, "a non-empty audience", aud);
    else if (is.audiences.indexOf(aud) !== i) r.problem(`${at}.issuer.audiences[${i}]`, "an audience not listed before (duplicate)", aud);
  });
  if (is.audienceMatchPolicy !== undefined && !(AUDIENCE_MATCH_POLICIES as readonly string[]).includes(is.audienceMatchPolicy)) {
    r.problem(`${at}.issuer.audienceMatchPolicy`, `one of ${AUDIENCE_MATCH_POLICIES.join(", ")}`, is.audienceMatchPolicy);
  } else if (is.audiences.length > 1 && is.audienceMatchPolicy !== "MatchAny") {
    r.problem(`${at}.issuer.audienceMatchPolicy`, "MatchAny when several audiences are listed", is.audienceMatchPolicy);
  }
  if (is.egressSelectorType !== undefined && !(EGRESS_SELECTOR_TYPES as readonly string[]).includes(is.egressSelectorType)) {
    r.problem(`${at}.issuer.egressSelectorType`, `one of ${EGRESS_SELECTOR_TYPES.join(", ")}`, is.egressSelectorType);
  }

  const seenClaims = new Set<string>();
  const claimValidationRules = a.claimValidationRules.flatMap((rule, i): JwtAuthenticatorConfig["claimValidationRules"][number][] => {
    const p = `${at}.claimValidationRules[${i}]`;
    if (rule.claim && rule.expression) return r.problem(`${p}.expression`, "not to be set together with `claim` (they are mutually exclusive)", rule.expression) ?? [];
    if (rule.claim) {
      if (rule.message !== undefined) r.problem(`${p}.message`, "to be set only with `expression`", rule.message);
      if (seenClaims.has(rule.claim)) r.problem(`${p}.claim`, "a claim without another rule (duplicate)", rule.claim);
      seenClaims.add(rule.claim);
      return [{ claim: rule.claim, requiredValue: rule.requiredValue ?? "" }];
    }
    if (rule.expression) {
      if (rule.requiredValue !== undefined) r.problem(`${p}.requiredValue`, "to be set only with `claim`", rule.requiredValue);
      const program = cel(rule.expression, `${p}.expression`, "claims", "bool", r);
      return program ? [{ expression: program, ...(rule.message !== undefined && { message: rule.message }) }] : [];
    }
    return r.missing(`${p}.claim`, "or `expression` to be set (one of the two)") ?? [];
  });

  const m = a.claimMappings;
  const username = mapping(m.username, `${at}.claimMappings.username`, "username", true, r) as ClaimSource | undefined;
  const groups = mapping(m.groups, `${at}.claimMappings.groups`, "groups", false, r) as ClaimSource | undefined;
  const uid = mapping(m.uid, `${at}.claimMappings.uid`, "uid", false, r) as JwtAuthenticatorConfig["claimMappings"]["uid"];
  const keys = new Set<string>();
  const extra = m.extra.flatMap((e, i) => {
    const p = `${at}.claimMappings.extra[${i}]`;
    if (!e.key) r.missing(`${p}.key`, "to be a domain-prefixed path such as example.org/team");
    else {
      const why = extraKeyProblem(e.key, suffix);
      if (why) r.problem(`${p}.key`, why, e.key);
      else if (keys.has(e.key)) r.problem(`${p}.key`, "a key not used by another extra mapping (duplicate)", e.key);
      keys.add(e.key);
    }
    if (!e.valueExpression) return r.missing(`${p}.valueExpression`, "to be a CEL expression producing a string or a list of strings") ?? [];
    const program = cel(e.valueExpression, `${p}.valueExpression`, "claims", "string or list of strings", r);
    return program && e.key ? [{ key: e.key, valueExpression: program }] : [];
  });

  // With `claims.email` in the username expression, `claims.email_verified` must be checked somewhere (as upstream).
  if (username && "expression" in username && username.expression.fieldsOf("claims").has("email")) {
    const programs = [username.expression, ...extra.map((e) => e.valueExpression), ...claimValidationRules.flatMap((c) => ("expression" in c ? [c.expression] : []))];
    if (!programs.some((p) => p.fieldsOf("claims").has("email_verified"))) {
      r.problem(`${at}.claimMappings.username.expression`, "to use `claims.email_verified` (in it, an extra mapping or a claim validation rule) when it uses `claims.email`", m.username.expression);
    }
  }

  const userValidationRules = a.userValidationRules.flatMap((rule, i) => {
    const p = `${at}.userValidationRules[${i}]`;
    if (!rule.expression) return r.missing(`${p}.expression`, "to be a CEL expression over `user` producing a boolean") ?? [];
    const program = cel(rule.expression, `${p}.expression`, "user", "bool", r);
    return program ? [{ expression: program, ...(rule.message !== undefined && { message: rule.message }) }] : [];
  });

  if (r.errors.length > errorsBefore || !is.url || !username) return undefined;
  return {
    issuer: {
      url: is.url,
      ...(is.discoveryURL !== undefined && { discoveryURL: is.discoveryURL }),
      ...(is.certificateAuthority !== undefined && { certificateAuthority: is.certificateAuthority }),
      audiences: is.audiences,
      ...(is.egressSelectorType !== undefined && { egressSelectorType: is.egressSelectorType as (typeof EGRESS_SELECTOR_TYPES)[number] }),
    },
    claimValidationRules,
    claimMappings: { username, ...(groups && { groups }), ...(uid && { uid }), extra },
    userValidationRules,
  };
}

function caProblem(pem: string, path: string, r: FieldReader): void {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    r.problem(path, "PEM CA certificates (the certificate text itself, not a file path)", NOT_PEM);
    return;
  }
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      r.problem(path, "PEM certificates that parse", NOT_PEM);
      return;
    }
  }
}

/** A CA field is described, not echoed (it may be long). */
const NOT_PEM = new Shown("text that is not a PEM certificate");

function readAnonymous(value: unknown, r: FieldReader): AnonymousConfig | undefined {
  if (value === undefined || value === null) return undefined;
  const a = anonymousShape.read(value, "anonymous", r);
  const enabled = r.boolean(a.enabled, "anonymous.enabled");
  if (enabled === undefined) r.missing("anonymous.enabled", "to be true or false");
  if (!enabled && a.conditions.length > 0) r.problem("anonymous.conditions", "to be empty when anonymous access is disabled", a.conditions);
  const seen = new Set<string>();
  const conditions = a.conditions.flatMap((c, i) => {
    if (!c.path) return r.missing(`anonymous.conditions[${i}].path`, "to be a request path such as /livez") ?? [];
    if (seen.has(c.path)) r.problem(`anonymous.conditions[${i}].path`, "a path not listed before (duplicate)", c.path);
    seen.add(c.path);
    return [c.path];
  });
  return { enabled: enabled ?? false, conditions };
}

export interface AuthenticationConfigOptions extends ConfigLoadOptions {
  /** The legacy `--anonymous-auth` flag was given: the file's `anonymous` must then be absent. */
  readonly anonymousFlagSet?: boolean;
  /** The `iss` of the server's own ServiceAccount tokens: no JWT authenticator may claim it (as upstream). */
  readonly serviceAccountIssuer?: string;
}

/** Reads and checks the whole file; throws CONFIG_INVALID naming every problem's field, so nothing is half-loaded. */
export function parseAuthenticationConfig(textIn: string, source: string, options: AuthenticationConfigOptions = {}): LoadedAuthenticationConfig {
  const doc = parseConfigText(textIn, source, WHAT);
  const r = new FieldReader();
  const suffix = groupNames(options.groupSuffix).suffix;
  checkHeader(doc, { apiVersion: authenticationConfigApiVersions(options.groupSuffix), kind: AUTHENTICATION_CONFIG_KIND }, r);
  const read = configShape.read(doc, "", r);
  if (read.jwt.length > MAX_JWT_AUTHENTICATORS) r.problem("jwt", `at most ${MAX_JWT_AUTHENTICATORS} authenticators`, new Shown(`${read.jwt.length}`));
  const jwt = read.jwt.flatMap((a, i) => readJwt(a, `jwt[${i}]`, suffix, r) ?? []);
  // Unique issuers and discovery URLs: at most one authenticator may cryptographically validate a token.
  const urls = new Map<string, number>();
  const discovery = new Map<string, number>();
  read.jwt.forEach((a, i) => {
    const { url, discoveryURL } = a.issuer;
    if (url && options.serviceAccountIssuer !== undefined && trimSlash(url) === trimSlash(options.serviceAccountIssuer)) {
      r.problem(`jwt[${i}].issuer.url`, "a URL other than the issuer of the server's ServiceAccount tokens", url);
    } else if (url) {
      if (urls.has(url)) r.problem(`jwt[${i}].issuer.url`, `a URL no other authenticator uses (jwt[${urls.get(url)}] has it)`, url);
      else urls.set(url, i);
    }
    if (discoveryURL) {
      if (discovery.has(discoveryURL)) r.problem(`jwt[${i}].issuer.discoveryURL`, `a URL no other authenticator uses (jwt[${discovery.get(discoveryURL)}] has it)`, discoveryURL);
      else discovery.set(discoveryURL, i);
    }
  });
  const anonymous = readAnonymous(read.anonymous, r);
  if (anonymous && options.anonymousFlagSet) r.problem("anonymous", "not to be set when the --anonymous-auth flag is given (one of the two)", new Shown("both"));
  const warnings = finish(r, { ...options, strict: options.strict ?? true }, WHAT, source);
  return { source, jwt, ...(anonymous && { anonymous }), warnings };
}

export async function loadAuthenticationConfig(path: string, options: AuthenticationConfigOptions = {}): Promise<LoadedAuthenticationConfig> {
  return parseAuthenticationConfig(await readConfigFile(path, WHAT), path, options);
}

// The custom signer's policy document: its compiled shape and the one validation pass that builds it.
import { isAbsolute, resolve } from "node:path";
import { NAME_ATTRIBUTE_SHORT_NAMES, OID } from "../src/pki/oids.js";
import { isKnownUsage, KNOWN_USAGES, resolveUsages } from "../src/pki/usages.js";
import { resolveKeyRef } from "../src/pki/pkcs11-uri.js";
import { MIN_EXPIRATION_SECONDS } from "../src/pki/validity.js";
import { formatDurationSeconds } from "../src/fields/duration.js";
import { FieldReader, join } from "../src/fields/reader.js";
import { compileCidrs, compilePatterns, type Matcher, type PatternOptions } from "./patterns.js";
import { signerNameProblem } from "./signer-name.js";

export type SanKind = "dns" | "ip" | "email" | "uri";
export const SAN_KINDS: readonly SanKind[] = ["dns", "ip", "email", "uri"];
export type TrustPublish = "ca" | "ca-and-intermediates" | "files";
export type ForbiddenSubjectAction = "deny" | "strip";

export interface NameRule {
  readonly permitted: readonly string[];
  readonly forbidden: readonly string[];
  readonly isPermitted: Matcher;
  readonly isForbidden: Matcher;
}

export interface SubjectAttributeRule {
  /** The attribute as written in the policy (CN, O, 2.5.4.97...). */
  readonly name: string;
  readonly oid: string;
  readonly patterns: readonly string[];
  readonly matches: Matcher;
}

export interface SignerPolicy {
  readonly signerName: string;
  /** CA certificate and key files, resolved against the policy file's directory. */
  readonly issuer?: { readonly certFile: string; readonly keyFile: string };
  /** Anchors to publish; `pems` holds the contents of `files` once a loader has read them. */
  readonly trust: { readonly publish: TrustPublish; readonly files: readonly string[]; readonly pems?: readonly string[] };
  readonly subject: {
    /** Permitted attributes by OID; absent means any subject is permitted. */
    readonly permitted?: ReadonlyMap<string, SubjectAttributeRule>;
    /** OIDs that must be present (after stripping), with their policy spelling. */
    readonly required: readonly { readonly name: string; readonly oid: string }[];
    readonly onForbiddenSubject: ForbiddenSubjectAction;
  };
  readonly subjectAltNames: {
    readonly dns?: NameRule & { readonly allowWildcardNames: boolean };
    readonly ip?: NameRule;
    readonly email?: NameRule;
    readonly uri?: NameRule;
    readonly otherNames: boolean;
    readonly required: readonly SanKind[];
    readonly minCount: number;
    readonly maxCount?: number;
  };
  readonly extensions: { readonly required: readonly string[]; readonly permitted: readonly string[]; readonly forbidden: readonly string[] };
  readonly usages: { readonly required: readonly string[]; readonly permitted?: readonly string[]; readonly forbidden: readonly string[] };
  readonly lifetime: { readonly defaultSeconds?: number; readonly minimumSeconds?: number; readonly maximumSeconds?: number };
  readonly caCertificates: { readonly allowCa: boolean; readonly maxPathLen?: number };
}

export interface ParsePolicyOptions {
  /** Where the document came from, for messages (a file path). */
  readonly source?: string;
  /** Directory that relative file paths are resolved against (default: the working directory). */
  readonly baseDir?: string;
}

const TOP_FIELDS = ["signerName", "issuer", "trust", "subject", "subjectAltNames", "extensions", "usages", "lifetime", "caCertificates"];
const OID_RE = /^[0-2](\.(0|[1-9]\d*))+$/;

// Extensions the issuer writes from other policy points; listing them under `extensions` would contradict those.
const MANAGED_EXTENSIONS: Readonly<Record<string, string>> = {
  [OID.subjectAltName]: "subjectAltNames",
  [OID.basicConstraints]: "caCertificates",
  [OID.keyUsage]: "usages",
  [OID.extKeyUsage]: "usages",
  [OID.subjectKeyIdentifier]: "the issuer",
  [OID.authorityKeyIdentifier]: "the issuer",
};

const ATTRIBUTE_OIDS = new Map<string, string>(
  Object.entries(NAME_ATTRIBUTE_SHORT_NAMES).map(([oid, short]) => [short.toUpperCase(), oid]),
);

/** Validates a parsed YAML/JSON document and compiles it; every problem is reported at once as POLICY_INVALID. */
export function parsePolicy(document: unknown, options: ParsePolicyOptions = {}): SignerPolicy {
  const r = new FieldReader({ unknownFieldsAreErrors: true });
  const baseDir = options.baseDir ?? process.cwd();
  const top = r.object(document ?? undefined, "", TOP_FIELDS) ?? {};
  if (document === undefined || document === null) r.problem("", "a policy (a mapping with signerName)", document);

  const signerName = r.string(top.signerName, "signerName", { nonEmpty: true });
  const nameProblem = signerName && signerNameProblem(signerName);
  if (top.signerName === undefined || top.signerName === null) r.missing("signerName");
  else if (nameProblem) r.problem("signerName", `a qualified signer name (${nameProblem})`, signerName);

  const policy: SignerPolicy = {
    signerName: signerName ?? "",
    ...readIssuer(r, top.issuer, baseDir),
    trust: readTrust(r, top.trust, baseDir),
    subject: readSubject(r, top.subject),
    subjectAltNames: readSans(r, top.subjectAltNames),
    extensions: readExtensions(r, top.extensions),
    usages: readUsages(r, top.usages),
    lifetime: readLifetime(r, top.lifetime),
    caCertificates: readCa(r, top.caCertificates),
  };
  r.throwIfInvalid("POLICY_INVALID", "signer policy", options.source);
  return policy;
}

function readIssuer(r: FieldReader, value: unknown, baseDir: string): Pick<SignerPolicy, "issuer"> {
  if (value === undefined || value === null) return {};
  const doc = r.object(value, "issuer", ["certFile", "keyFile"]) ?? {};
  const file = (key: "certFile" | "keyFile") =>
    doc[key] === undefined || doc[key] === null ? r.missing(`issuer.${key}`) : r.string(doc[key], `issuer.${key}`, { nonEmpty: true });
  const certFile = file("certFile");
  const keyFile = file("keyFile");
  if (!certFile || !keyFile) return {};
  return { issuer: { certFile: resolveFrom(baseDir, certFile), keyFile: resolveKeyRef(baseDir, keyFile) } };
}

function readTrust(r: FieldReader, value: unknown, baseDir: string): SignerPolicy["trust"] {
  const doc = r.object(value, "trust", ["publish", "files"]) ?? {};
  const publish = r.oneOf<TrustPublish>(doc.publish, "trust.publish", ["ca", "ca-and-intermediates", "files"], "ca");
  const files = r.strings(doc.files, "trust.files").map((f) => resolveFrom(baseDir, f));
  if (publish === "files" && files.length === 0) r.problem("trust.files", "to list at least one PEM file when trust.publish is files", doc.files);
  if (publish !== "files" && files.length > 0) r.problem("trust.files", "to be set only when trust.publish is files (it is only read then)", doc.files);
  return { publish, files };
}

function readSubject(r: FieldReader, value: unknown): SignerPolicy["subject"] {
  const doc = r.object(value, "subject", ["permitted", "required", "onForbiddenSubject"]) ?? {};
  const onForbiddenSubject = r.oneOf<ForbiddenSubjectAction>(doc.onForbiddenSubject, "subject.onForbiddenSubject", ["deny", "strip"], "deny");
  let permitted: Map<string, SubjectAttributeRule> | undefined;
  if (doc.permitted !== undefined && doc.permitted !== null) {
    permitted = new Map();
    const perm = r.object(doc.permitted, "subject.permitted") ?? {};
    for (const [name, patterns] of Object.entries(perm)) {
      const field = join("subject.permitted", name);
      const oid = attributeOid(name);
      if (!oid) r.problem(field, `a subject attribute (${[...ATTRIBUTE_OIDS.keys()].join(", ")} or a dotted OID) as its key`, name);
      const list = compiled(r, field, r.strings(patterns, field), {});
      if (oid && list) permitted.set(oid, { name, oid, patterns: list.texts, matches: list.matcher });
    }
  }
  const required = r.strings(doc.required, "subject.required").flatMap((name, i) => {
    const oid = attributeOid(name);
    if (!oid) return r.problem(`subject.required[${i}]`, `a subject attribute (${[...ATTRIBUTE_OIDS.keys()].join(", ")} or a dotted OID)`, name) ?? [];
    if (permitted && !permitted.has(oid)) return r.problem(`subject.required[${i}]`, "an attribute listed in subject.permitted", name) ?? [];
    return [{ name, oid }];
  });
  if (onForbiddenSubject === "strip" && !permitted) r.problem("subject.onForbiddenSubject", "deny when subject.permitted is not set (strip needs it to say what to keep)", onForbiddenSubject);
  return permitted ? { permitted, required, onForbiddenSubject } : { required, onForbiddenSubject };
}

function attributeOid(name: string): string | undefined {
  return OID_RE.test(name) ? name : ATTRIBUTE_OIDS.get(name.toUpperCase());
}

const SAN_OPTIONS: Readonly<Record<Exclude<SanKind, "ip">, PatternOptions>> = {
  dns: { separator: ".", ignoreCase: true },
  email: { separator: "@", ignoreCase: true },
  uri: { separator: "/" },
};

function readSans(r: FieldReader, value: unknown): SignerPolicy["subjectAltNames"] {
  const doc = r.object(value, "subjectAltNames", [...SAN_KINDS, "otherNames", "required", "minCount", "maxCount"]) ?? {};
  const rules: Partial<Record<SanKind, NameRule>> = {};
  let allowWildcardNames = false;
  for (const kind of SAN_KINDS) {
    if (doc[kind] === undefined || doc[kind] === null) continue;
    const field = `subjectAltNames.${kind}`;
    const kindDoc = r.object(doc[kind], field, kind === "dns" ? ["permitted", "forbidden", "allowWildcardNames"] : ["permitted", "forbidden"]) ?? {};
    if (kind === "dns") allowWildcardNames = r.boolean(kindDoc.allowWildcardNames, `${field}.allowWildcardNames`, false);
    const permitted = readNameList(r, kind, `${field}.permitted`, kindDoc.permitted);
    const forbidden = readNameList(r, kind, `${field}.forbidden`, kindDoc.forbidden);
    if (kindDoc.permitted === undefined) r.missing(`${field}.permitted`, `to be set; use ${kind === "ip" ? '["0.0.0.0/0", "::/0"]' : '["**"]'} to permit any`);
    if (permitted && forbidden) {
      rules[kind] = { permitted: permitted.texts, forbidden: forbidden.texts, isPermitted: permitted.matcher, isForbidden: forbidden.matcher };
    }
  }
  const required = r.strings(doc.required, "subjectAltNames.required", (k) =>
    !(SAN_KINDS as readonly string[]).includes(k) ? `one of ${SAN_KINDS.join(", ")}`
    : doc[k] === undefined ? `a kind subjectAltNames permits (subjectAltNames.${k} does not permit any ${k} names)` : undefined,
  ) as SanKind[];
  const minCount = r.integer(doc.minCount, "subjectAltNames.minCount", { min: 0 }) ?? 0;
  const maxCount = r.integer(doc.maxCount, "subjectAltNames.maxCount", { min: 0 });
  if (maxCount !== undefined && maxCount < Math.max(minCount, required.length)) {
    r.problem("subjectAltNames.maxCount", "at least minCount and the number of required kinds", maxCount);
  }
  return {
    ...(rules.dns && { dns: { ...rules.dns, allowWildcardNames } }),
    ...(rules.ip && { ip: rules.ip }),
    ...(rules.email && { email: rules.email }),
    ...(rules.uri && { uri: rules.uri }),
    otherNames: r.boolean(doc.otherNames, "subjectAltNames.otherNames", false),
    required,
    minCount,
    ...(maxCount !== undefined && { maxCount }),
  };
}

function readNameList(r: FieldReader, kind: SanKind, field: string, value: unknown): { texts: string[]; matcher: Matcher } | undefined {
  const texts = r.strings(value, field);
  if (kind !== "ip") return compiled(r, field, texts, SAN_OPTIONS[kind]);
  try {
    return { texts, matcher: compileCidrs(texts) };
  } catch (error) {
    return r.problem(field, `addresses or CIDR ranges (${(error as Error).message})`, value);
  }
}

function compiled(r: FieldReader, field: string, texts: string[], options: PatternOptions): { texts: string[]; matcher: Matcher } | undefined {
  try {
    return { texts, matcher: compilePatterns(texts, options) };
  } catch (error) {
    return r.problem(field, `patterns that compile (${(error as Error).message})`, texts);
  }
}

function readExtensions(r: FieldReader, value: unknown): SignerPolicy["extensions"] {
  const doc = r.object(value, "extensions", ["required", "permitted", "forbidden"]) ?? {};
  const check = (oid: string): string | undefined =>
    !OID_RE.test(oid) ? "a dotted object identifier such as 1.3.6.1.4.1.99999.1"
    : MANAGED_EXTENSIONS[oid] ? `an extension not governed by another policy point (this one is governed by ${MANAGED_EXTENSIONS[oid]})` : undefined;
  const lists = {
    required: r.strings(doc.required, "extensions.required", check),
    permitted: r.strings(doc.permitted, "extensions.permitted", check),
    forbidden: r.strings(doc.forbidden, "extensions.forbidden", check),
  };
  for (const oid of lists.forbidden) {
    if (lists.required.includes(oid) || lists.permitted.includes(oid)) r.problem("extensions.forbidden", "extensions that are not also required or permitted", oid);
  }
  return lists;
}

function readUsages(r: FieldReader, value: unknown): SignerPolicy["usages"] {
  const doc = r.object(value, "usages", ["required", "permitted", "forbidden"]) ?? {};
  const check = (u: string): string | undefined => (isKnownUsage(u) ? undefined : `a known usage (${KNOWN_USAGES.join(", ")})`);
  const required = r.strings(doc.required, "usages.required", check);
  const permitted = doc.permitted === undefined || doc.permitted === null ? undefined : r.strings(doc.permitted, "usages.permitted", check);
  const forbidden = r.strings(doc.forbidden, "usages.forbidden", check);
  for (const u of forbidden) {
    const clash = [...required, ...(permitted ?? [])].find((other) => sameUsage(u, other));
    if (clash) r.problem("usages.forbidden", `usages that do not contradict required or permitted ${JSON.stringify(clash)}`, u);
  }
  return permitted ? { required, permitted, forbidden } : { required, forbidden };
}

/** Two usage strings that mean the same bit or purpose ("signing" and "digital signature"). */
export function sameUsage(a: string, b: string): boolean {
  const x = resolveUsages([a]);
  const y = resolveUsages([b]);
  return x.keyUsage === y.keyUsage && x.extKeyUsage[0] === y.extKeyUsage[0];
}

function readLifetime(r: FieldReader, value: unknown): SignerPolicy["lifetime"] {
  const doc = r.object(value, "lifetime", ["default", "minimum", "maximum"]) ?? {};
  const read = (key: string): number | undefined => {
    const ms = r.duration(doc[key], `lifetime.${key}`, { min: MIN_EXPIRATION_SECONDS * 1000, wholeSeconds: true });
    return ms === undefined ? undefined : ms / 1000;
  };
  const lifetime = { defaultSeconds: read("default"), minimumSeconds: read("minimum"), maximumSeconds: read("maximum") };
  const { defaultSeconds: def, minimumSeconds: min, maximumSeconds: max } = lifetime;
  const bound = (what: string, seconds: number) => `${what} (${formatDurationSeconds(seconds)})`;
  if (min !== undefined && max !== undefined && min > max) r.problem("lifetime.minimum", bound("at most lifetime.maximum", max), doc.minimum);
  if (def !== undefined && min !== undefined && def < min) r.problem("lifetime.default", bound("at least lifetime.minimum", min), doc.default);
  if (def !== undefined && max !== undefined && def > max) r.problem("lifetime.default", bound("at most lifetime.maximum", max), doc.default);
  return Object.fromEntries(Object.entries(lifetime).filter(([, v]) => v !== undefined));
}

function readCa(r: FieldReader, value: unknown): SignerPolicy["caCertificates"] {
  const doc = r.object(value, "caCertificates", ["allowCa", "maxPathLen"]) ?? {};
  const allowCa = r.boolean(doc.allowCa, "caCertificates.allowCa", false);
  const maxPathLen = r.integer(doc.maxPathLen, "caCertificates.maxPathLen", { min: 0 });
  if (maxPathLen !== undefined && !allowCa) r.problem("caCertificates.maxPathLen", "to be set only when allowCa is true (it only applies then)", maxPathLen);
  return maxPathLen === undefined ? { allowCa } : { allowCa, maxPathLen };
}

function resolveFrom(baseDir: string, file: string): string {
  return isAbsolute(file) ? file : resolve(baseDir, file);
}


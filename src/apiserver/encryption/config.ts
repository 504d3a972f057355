// EncryptionConfiguration (apiserver.config.<suffix>/v1): which resources are encrypted at rest, by which providers.
// Read with the one field reader; every problem names its field, and a secret is described, never echoed.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "../../config/config-document.js";
import { FieldReader, Shown, join } from "../../fields/reader.js";
import { KEY_LENGTHS, identity, keyTransformer, type ProviderType, type Transformer } from "./providers.js";

export const ENCRYPTION_CONFIG_KIND = "EncryptionConfiguration";
const WHAT = "encryption configuration";
const PROVIDERS: readonly string[] = ["aescbc", "aesgcm", "secretbox", "identity", "kms"];

export function encryptionConfigApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  return `apiserver.config.${groupNames(groupSuffix).suffix}/v1`;
}

/** One `resources[]` entry: what it matches and its providers, the first writing, all reading. */
export interface ResourceRule {
  /** As written: `secrets`, `secrets.`, `leases.coordination.k8s.io`, `*.`, `*.<group>`, `*.*`. */
  readonly resources: readonly string[];
  readonly transformers: readonly Transformer[];
}

export interface EncryptionConfig {
  readonly source: string;
  readonly rules: readonly ResourceRule[];
  readonly warnings: readonly string[];
}

/** `resource.group` split; a name without a dot, or ending in one, is of the core group (""). */
export function splitResource(entry: string): { resource: string; group: string } {
  const dot = entry.indexOf(".");
  return dot < 0 ? { resource: entry, group: "" } : { resource: entry.slice(0, dot), group: entry.slice(dot + 1) };
}

/** Whether the entry `pattern` covers the resource `resource` of `group` (wildcards `*.group`, `*.`, `*.*`). */
export function covers(pattern: string, resource: string, group: string): boolean {
  const p = splitResource(pattern);
  if (p.resource === "*" && p.group === "*") return true;
  return p.group === group && (p.resource === "*" || p.resource === resource);
}

/** Whether every resource `b` names is also named by `a`. */
function masks(a: string, b: string): boolean {
  const q = splitResource(b);
  if (q.resource === "*") return a === "*.*" || (q.group !== "*" && splitResource(a).resource === "*" && splitResource(a).group === q.group);
  return covers(a, q.resource, q.group);
}

function readResources(value: unknown, at: string, earlier: ReadonlyArray<{ entry: string; at: string }>, r: FieldReader): string[] {
  const entries = r.strings(value, at, (entry) => {
    if (entry !== entry.toLowerCase()) return "a resource name without capital letters";
    if (entry === "*") return "'*.' (all resources of the core group) or '*.*' (all resources), not '*'";
    const { resource, group } = splitResource(entry);
    if (resource.includes("*") && resource !== "*") return "a resource name, '*.<group>', '*.' or '*.*'";
    if (group.includes("*") && !(resource === "*" && group === "*")) return "a resource name, '*.<group>', '*.' or '*.*'";
    return undefined;
  });
  if (Array.isArray(value) && value.length === 0) r.missing(at, "to name at least one resource");
  entries.forEach((entry, i) => {
    const path = `${at}[${i}]`;
    const same = entries.findIndex((other, j) => j < i && (masks(other, entry) || masks(entry, other)));
    if (same >= 0) {
      r.problem(path, `not to overlap \`${at}[${same}]\` (${JSON.stringify(entries[same])}) in the same list: the narrower entry would be masked`, entry);
      return;
    }
    const before = earlier.find((e) => masks(e.entry, entry));
    if (before) r.problem(path, `a resource not already covered by \`${before.at}\` (${JSON.stringify(before.entry)}), which comes first and wins`, entry);
  });
  return entries;
}

function readKeys(type: Exclude<ProviderType, "identity">, value: unknown, at: string, r: FieldReader): Transformer[] {
  const block = r.object(value, at, ["keys"]);
  if (!block) return [];
  const keysAt = join(at, "keys");
  if (!Array.isArray(block.keys) || block.keys.length === 0) {
    if (Array.isArray(block.keys) || block.keys === undefined) r.missing(keysAt, "to hold at least one key");
    else r.list(block.keys, keysAt);
    return [];
  }
  const names = new Set<string>();
  return r.list(block.keys, keysAt, (item, path) => {
    const key = r.object(item, path, ["name", "secret"]);
    if (!key) return r.missing(path, "to be a key with a name and a secret");
    const name = r.string(key.name, join(path, "name"), { nonEmpty: true }) ?? r.missing(join(path, "name"));
    if (name !== undefined && name.includes(":")) r.problem(join(path, "name"), "a name without ':' (it is part of the stored prefix)", name);
    if (name !== undefined && names.has(name)) r.problem(join(path, "name"), "a name not used by an earlier key of this provider", name);
    if (name !== undefined) names.add(name);
    const secretAt = join(path, "secret");
    if (typeof key.secret !== "string" || key.secret === "") return r.missing(secretAt, "to be a base64 key");
    const secret = Buffer.from(key.secret, "base64");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(key.secret) || secret.toString("base64") !== key.secret) return r.problem(secretAt, "base64 text", new Shown("text that is not base64"));
    if (!KEY_LENGTHS[type].includes(secret.length)) {
      return r.problem(secretAt, `a key of ${KEY_LENGTHS[type].join(", ")} bytes for ${type}`, new Shown(`a key of ${secret.length} bytes`));
    }
    return name === undefined || name.includes(":") ? undefined : keyTransformer(type, name, secret);
  });
}

function readProviders(value: unknown, at: string, r: FieldReader): Transformer[] {
  if (!Array.isArray(value) || value.length === 0) {
    if (value === undefined || Array.isArray(value)) r.missing(at, "to hold at least one provider");
    else r.list(value, at);
    return [];
  }
  return r.list(value, at, (item, path) => {
    const provider = r.object(item, path, PROVIDERS);
    const set = provider ? Object.keys(provider).filter((k) => PROVIDERS.includes(k)) : [];
    if (provider && set.length !== 1) {
      return r.problem(path, set.length === 0 ? `one of ${PROVIDERS.join(", ")}` : "exactly one provider (split several into separate list items)", item);
    }
    const type = set[0];
    if (type === undefined) return undefined;
    if (type === "kms") return r.problem(join(path, "kms"), "a provider this server supports (identity, aescbc, aesgcm, secretbox)", "kms");
    if (type === "identity") {
      r.object(provider![type], join(path, "identity"), []);
      return [identity];
    }
    return readKeys(type as Exclude<ProviderType, "identity">, provider![type], join(path, type), r);
  }).flat();
}

export function parseEncryptionConfig(text: string, source: string, options: ConfigLoadOptions = {}): EncryptionConfig {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader({ unknownFieldsAreErrors: true });
  checkHeader(doc, { apiVersion: encryptionConfigApiVersion(options.groupSuffix), kind: ENCRYPTION_CONFIG_KIND }, r);
  r.object(doc, "", ["apiVersion", "kind", "resources"]);
  if (!Array.isArray(doc.resources) || doc.resources.length === 0) {
    if (doc.resources === undefined || Array.isArray(doc.resources)) r.missing("resources", "to hold at least one resource configuration");
    else r.list(doc.resources, "resources");
  }
  const earlier: Array<{ entry: string; at: string }> = [];
  const rules = r.list(doc.resources, "resources", (item, path) => {
    const rule = r.object(item, path, ["resources", "providers"]);
    if (!rule) return r.missing(path, "to be a resource configuration");
    const resources = readResources(rule.resources, join(path, "resources"), earlier, r);
    if (rule.resources === undefined) r.missing(join(path, "resources"), "to name at least one resource");
    resources.forEach((entry, i) => earlier.push({ entry, at: `${join(path, "resources")}[${i}]` }));
    return { resources, transformers: readProviders(rule.providers, join(path, "providers"), r) };
  });
  const warnings = finish(r, { ...options, strict: true }, WHAT, source);
  return { source, rules, warnings };
}

export async function loadEncryptionConfig(path: string, options: ConfigLoadOptions = {}): Promise<EncryptionConfig> {
  return parseEncryptionConfig(await readConfigFile(path, WHAT), path, options);
}

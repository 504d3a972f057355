// EncryptionConfiguration (apiserver.config.<suffix>/v1): which resources are encrypted at rest, by which providers.
// Read with the one field reader; every problem names its field, and a secret is described, never echoed.
import { contentDigest } from "../../config/watched-file.js";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "../../config/config-document.js";
import { FieldReader, Shown, join } from "../../fields/reader.js";
import type { Logger } from "../../logger.js";
import type { Clock } from "../../time/clock.js";
import { KmsTransformer } from "./kms-provider.js";
import { socketPath } from "./kms-client.js";
import { KEY_LENGTHS, identity, keyTransformer, type KeyedProviderType, type Transformer } from "./providers.js";

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
  /** The KMS providers of every rule, once each: started by the store that uses them, closed when it closes. */
  readonly kms: readonly KmsTransformer[];
  /** SHA-256 of the file's text (upstream's EncryptionFileContentHash): a reload skips an unchanged file. */
  readonly contentHash: string;
}

export interface EncryptionLoadOptions extends ConfigLoadOptions {
  /** For the KMS providers: their poll timers and write deadline, and their log lines. */
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Upstream's answer to `apiVersion: v1` (KMS v1 is disabled by default upstream, and not implemented here). */
export const KMS_V1_REFUSED = "KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.";
const KMS_DEFAULT_TIMEOUT_MS = 3000;


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

function readKeys(type: KeyedProviderType, value: unknown, at: string, r: FieldReader): Transformer[] {
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

/** Reads a `kms` block: v2 only, a unique name, a unix socket endpoint, a timeout (3 s by default). */
function readKms(value: unknown, at: string, r: FieldReader, kms: KmsProviders): Transformer | undefined {
  const block = r.object(value, at, ["apiVersion", "name", "endpoint", "timeout", "cachesize"]);
  if (!block) return r.missing(at, "to be a KMS provider with apiVersion, name and endpoint");
  const apiVersion = block.apiVersion ?? "v1";
  if (apiVersion === "v1") return r.problem(join(at, "apiVersion"), `v2 (${KMS_V1_REFUSED})`, apiVersion);
  if (apiVersion !== "v2") return r.problem(join(at, "apiVersion"), "v2", apiVersion);
  if (block.cachesize !== undefined) r.problem(join(at, "cachesize"), "no cachesize (it applies to KMS v1 only)", block.cachesize);
  const name = r.string(block.name, join(at, "name"), { nonEmpty: true }) ?? r.missing(join(at, "name"));
  if (name !== undefined && name.includes(":")) r.problem(join(at, "name"), "a name without ':' (it is part of the stored prefix)", name);
  if (name !== undefined && kms.names.has(name)) r.problem(join(at, "name"), "a KMS provider name not used earlier in the file (it names the stored prefix)", name);
  const endpoint = r.string(block.endpoint, join(at, "endpoint"), { nonEmpty: true }) ?? r.missing(join(at, "endpoint"));
  if (endpoint !== undefined && socketPath(endpoint) === undefined) r.problem(join(at, "endpoint"), "a unix socket, unix:///path/to/socket", endpoint);
  const timeoutMs = r.duration(block.timeout, join(at, "timeout"), { min: 1 }) ?? KMS_DEFAULT_TIMEOUT_MS;
  if (name === undefined || name.includes(":") || kms.names.has(name) || endpoint === undefined || socketPath(endpoint) === undefined) return undefined;
  kms.names.add(name);
  const t = new KmsTransformer({ name, endpoint, timeoutMs }, kms.options);
  kms.list.push(t);
  return t;
}

interface KmsProviders {
  readonly names: Set<string>;
  readonly list: KmsTransformer[];
  readonly options: { clock?: Clock; logger?: Logger };
}

function readProviders(value: unknown, at: string, r: FieldReader, kms: KmsProviders): Transformer[] {
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
    if (type === "kms") return readKms(provider!.kms, join(path, "kms"), r, kms);
    if (type === "identity") {
      r.object(provider![type], join(path, "identity"), []);
      return [identity];
    }
    return readKeys(type as KeyedProviderType, provider![type], join(path, type), r);
  }).flat();
}

export function parseEncryptionConfig(text: string, source: string, options: EncryptionLoadOptions = {}): EncryptionConfig {
  const doc = parseConfigText(text, source, WHAT);
  const kms: KmsProviders = { names: new Set(), list: [], options: { ...(options.clock && { clock: options.clock }), ...(options.logger && { logger: options.logger }) } };
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
    return { resources, transformers: readProviders(rule.providers, join(path, "providers"), r, kms) };
  });
  try {
    const warnings = finish(r, { ...options, strict: true }, WHAT, source);
    return { source, rules, warnings, kms: kms.list, contentHash: contentDigest(text) };
  } catch (err) {
    for (const t of kms.list) t.close();
    throw err;
  }
}

export async function loadEncryptionConfig(path: string, options: EncryptionLoadOptions = {}): Promise<EncryptionConfig> {
  return parseEncryptionConfig(await readConfigFile(path, WHAT), path, options);
}

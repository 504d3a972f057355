// AdmissionConfiguration (apiserver.config.<suffix>/v1, apiserver.<suffix>/v1alpha1): the named admission plugins and
// each one's configuration, inline or in a file beside it; the catalog of plugin names the server knows.
import { dirname, resolve } from "node:path";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { isPlatformError, PlatformError } from "../errors.js";
import { FieldReader, join } from "../fields/reader.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { resolveWebhookCredentials, webhookConfigReader, type WebhookAdmissionConfig } from "./admission-webhooks.js";
import { readEventRateLimitConfig, type EventRateLimitConfig } from "./event-rate-limit.js";
import { readImagePolicyConfig, resolveImagePolicyConfig, type ImagePolicyConfig } from "./image-policy.js";

export const ADMISSION_CONFIG_KIND = "AdmissionConfiguration";
const WHAT = "admission configuration";

export interface AdmissionPluginInfo {
  /** Runs unless disabled; a plugin off by default runs when enabled by flag or given a configuration. */
  readonly enabledByDefault: boolean;
  /** Why the plugin cannot be disabled (it guards an invariant other parts rely on). */
  readonly required?: string;
  /** Reads the plugin's configuration document; a plugin without one takes none. */
  readonly readConfig?: (doc: unknown, at: string, r: FieldReader, groupSuffix?: string) => unknown;
  /** Completes a checked configuration with what must be read asynchronously (a file it names, relative to `source`). */
  readonly resolve?: (config: never, source: string, groupSuffix?: string) => Promise<unknown>;
}

/** Every plugin name the server knows, upstream's where upstream has the check (docs/admission.md). */
export const ADMISSION_PLUGINS = {
  CertificateSigningRequestRequester: { enabledByDefault: true, required: "signers and approvers trust the requester fields it sets" },
  // On by default upstream, where webhooks come from the API; here they come only from the file, so listing it enables it.
  MutatingAdmissionWebhook: { enabledByDefault: false, readConfig: webhookConfigReader("Mutating"), resolve: resolveWebhookCredentials },
  EventRateLimit: { enabledByDefault: false, readConfig: readEventRateLimitConfig },
  CertificateSubjectRestriction: { enabledByDefault: true },
  CertificateApproval: { enabledByDefault: true },
  CertificateRevocation: { enabledByDefault: true },
  CertificateSigning: { enabledByDefault: true },
  ClusterTrustBundleAttest: { enabledByDefault: true },
  RBACEscalationPrevention: { enabledByDefault: true, required: "without it any user who may write a role or binding could grant themselves anything" },
  ValidatingAdmissionWebhook: { enabledByDefault: false, readConfig: webhookConfigReader("Validating"), resolve: resolveWebhookCredentials },
  ImagePolicyWebhook: { enabledByDefault: false, readConfig: readImagePolicyConfig, resolve: resolveImagePolicyConfig },
} as const satisfies Record<string, AdmissionPluginInfo>;

export type AdmissionPluginName = keyof typeof ADMISSION_PLUGINS;
export const ADMISSION_PLUGIN_NAMES = Object.keys(ADMISSION_PLUGINS) as AdmissionPluginName[];

export function isAdmissionPluginName(name: string): name is AdmissionPluginName {
  return Object.hasOwn(ADMISSION_PLUGINS, name);
}

/** The configurations the file gave, by plugin. */
export interface AdmissionPluginConfigs {
  readonly EventRateLimit?: EventRateLimitConfig;
  readonly MutatingAdmissionWebhook?: WebhookAdmissionConfig;
  readonly ValidatingAdmissionWebhook?: WebhookAdmissionConfig;
  readonly ImagePolicyWebhook?: ImagePolicyConfig;
}

export interface LoadedAdmissionConfig {
  readonly source: string;
  readonly configs: AdmissionPluginConfigs;
  /** The plugin names the file lists, in its order. */
  readonly listed: readonly AdmissionPluginName[];
}

/** Both versions upstream serves the kind in: v1 and v1alpha1 (v1beta1 has no AdmissionConfiguration). */
export function admissionConfigApiVersions(groupSuffix: string = DEFAULT_GROUP_SUFFIX): readonly string[] {
  const suffix = groupNames(groupSuffix).suffix;
  return [`apiserver.config.${suffix}/v1`, `apiserver.${suffix}/v1alpha1`];
}

interface PluginEntry {
  readonly name: AdmissionPluginName;
  readonly at: string;
  /** The document to read and where it is: inline (`plugins[i].configuration`) or a file's top level. */
  readonly config?: { readonly doc: unknown; readonly at: string; readonly file?: string };
}

/** The entries of `plugins`, with each `path` read (relative to the file's directory); an inline configuration wins. */
async function readEntries(doc: Record<string, unknown>, source: string, r: FieldReader): Promise<PluginEntry[]> {
  const entries: PluginEntry[] = [];
  const seen = new Map<string, string>();
  const items = r.list(doc.plugins, "plugins");
  for (const [i, item] of items.entries()) {
    const at = `plugins[${i}]`;
    const raw = r.object(item, at, ["name", "path", "configuration"]);
    if (!raw) {
      r.missing(at, "to be a plugin entry with a name");
      continue;
    }
    const name = r.string(raw.name, join(at, "name"), { nonEmpty: true });
    if (name === undefined) {
      if (raw.name === undefined || raw.name === null) r.missing(join(at, "name"), "to name an admission plugin");
      continue;
    }
    if (!isAdmissionPluginName(name)) {
      r.problem(join(at, "name"), `a known admission plugin (${ADMISSION_PLUGIN_NAMES.join(", ")})`, name);
      continue;
    }
    if (seen.has(name)) r.problem(join(at, "name"), `to be listed once (also \`${seen.get(name)}.name\`)`, name);
    seen.set(name, at);
    const path = r.string(raw.path, join(at, "path"), { nonEmpty: true });
    if (raw.configuration !== undefined && raw.configuration !== null) {
      entries.push({ name, at, config: { doc: raw.configuration, at: join(at, "configuration") } });
    } else if (path !== undefined) {
      const file = resolve(dirname(source), path);
      try {
        entries.push({ name, at, config: { doc: parseConfigText(await readConfigFile(file, `${name} configuration`), file, `${name} configuration`), at: "", file } });
      } catch (err) {
        if (!isPlatformError(err, "IO_ERROR")) throw err;
        r.problem(join(at, "path"), `a readable file (relative to the directory of ${source}): ${err.message}`, path);
      }
    } else {
      entries.push({ name, at });
    }
  }
  return entries;
}

/**
 * Reads each entry's configuration with its plugin's reader: inline ones into `r`, so their problems join the
 * admission file's; those from a file are returned for reading after that (their problems name their own file).
 */
function readInline(entries: readonly PluginEntry[], options: ConfigLoadOptions, r: FieldReader): { configs: Record<string, unknown>; files: PluginEntry[] } {
  const configs: Record<string, unknown> = {};
  const files: PluginEntry[] = [];
  for (const entry of entries) {
    const { name, at, config } = entry;
    const info: AdmissionPluginInfo = ADMISSION_PLUGINS[name];
    if (!config) continue;
    if (!info.readConfig) r.problem(join(at, config.file ? "path" : "configuration"), `to be unset: ${name} takes no configuration`, config.file ?? config.doc);
    else if (config.file !== undefined) files.push(entry);
    else configs[name] = info.readConfig(config.doc, config.at, r, options.groupSuffix);
  }
  return { configs, files };
}

export async function parseAdmissionConfig(text: string, source: string, options: ConfigLoadOptions = {}): Promise<LoadedAdmissionConfig> {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: admissionConfigApiVersions(options.groupSuffix), kind: ADMISSION_CONFIG_KIND }, r);
  for (const key of Object.keys(doc)) if (!["apiVersion", "kind", "plugins"].includes(key)) r.unknownField("", key, ["apiVersion", "kind", "plugins"]);
  const entries = await readEntries(doc, source, r);
  const { configs, files } = readInline(entries, options, r);
  // Unknown fields are errors: a misspelt `configuraton` would silently leave a plugin unconfigured.
  const strict = { ...options, strict: options.strict ?? true };
  finish(r, strict, WHAT, source);
  for (const { name, config } of files) {
    const own = new FieldReader();
    configs[name] = (ADMISSION_PLUGINS[name] as AdmissionPluginInfo).readConfig!(config!.doc, "", own, options.groupSuffix);
    finish(own, strict, `${name} configuration`, config!.file!);
  }
  for (const { name, config } of entries) {
    const resolveConfig = (ADMISSION_PLUGINS[name] as AdmissionPluginInfo).resolve as ((c: unknown, source: string, suffix?: string) => Promise<unknown>) | undefined;
    if (resolveConfig && configs[name] !== undefined) configs[name] = await resolveConfig(configs[name], config?.file ?? source, options.groupSuffix);
  }
  return { source, configs: configs as AdmissionPluginConfigs, listed: entries.map((e) => e.name) };
}

export async function loadAdmissionConfig(path: string, options: ConfigLoadOptions = {}): Promise<LoadedAdmissionConfig> {
  return parseAdmissionConfig(await readConfigFile(path, WHAT), path, options);
}

export interface AdmissionPluginSelection {
  /** `--enable-admission-plugins`: plugins off by default to run. */
  readonly enable?: readonly string[];
  /** `--disable-admission-plugins`: plugins on by default not to run. */
  readonly disable?: readonly string[];
  readonly file?: LoadedAdmissionConfig;
}

/**
 * The plugins that run: those on by default, those enabled by flag, those the file configures, less those disabled.
 * Unknown names, a name in both lists, disabling a required plugin, or a plugin that needs a configuration without one
 * are refused, flag by flag.
 */
export function enabledAdmissionPlugins(o: AdmissionPluginSelection): AdmissionPluginName[] {
  const flag = (list: readonly string[] | undefined, name: string): AdmissionPluginName[] =>
    (list ?? []).map((p) => {
      if (!isAdmissionPluginName(p)) throw new PlatformError("INVALID_OPTION", `expected \`${name}\` to list known admission plugins (${ADMISSION_PLUGIN_NAMES.join(", ")}), got ${JSON.stringify(p)}`);
      return p;
    });
  const enable = flag(o.enable, "--enable-admission-plugins");
  const disable = flag(o.disable, "--disable-admission-plugins");
  const both = enable.filter((p) => disable.includes(p));
  if (both.length > 0) throw new PlatformError("INVALID_OPTION", `${both.join(", ")} in both --enable-admission-plugins and --disable-admission-plugins`);
  for (const p of disable) {
    const why = (ADMISSION_PLUGINS[p] as AdmissionPluginInfo).required;
    if (why) throw new PlatformError("INVALID_OPTION", `expected \`--disable-admission-plugins\` not to name ${p}, which always runs: ${why}`);
  }
  const on = ADMISSION_PLUGIN_NAMES.filter((p) => !disable.includes(p) && (ADMISSION_PLUGINS[p].enabledByDefault || enable.includes(p) || (o.file?.listed.includes(p) ?? false)));
  for (const p of on) {
    if ((ADMISSION_PLUGINS[p] as AdmissionPluginInfo).readConfig && !(p in (o.file?.configs ?? {}))) {
      throw new PlatformError("INVALID_OPTION", `${p} needs a configuration: give it an entry with \`path\` or \`configuration\` in --admission-control-config-file`);
    }
  }
  return on;
}

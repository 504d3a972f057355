// The ImagePolicyWebhook plugin's configuration (upstream's `imagePolicy` stanza): the backend's client config file,
// how long answers are cached, the retry backoff and whether a failed call admits the Pod.
import { dirname, resolve } from "node:path";
import { groupNames } from "../api/group.js";
import { loadClientConfig } from "../client/config-file.js";
import { resolveRestConfig } from "../client/resolve-config.js";
import type { RestConfig } from "../client/rest-config.js";
import { PlatformError } from "../errors.js";
import { join, type FieldReader } from "../fields/reader.js";
import { checkHeader } from "./config-document.js";

export interface ImagePolicyConfig {
  readonly kubeConfigFile: string;
  /** Cache time of allow and deny answers in ms; 0 caches nothing. */
  readonly allowTtlMs: number;
  readonly denyTtlMs: number;
  readonly retryBackoffMs: number;
  /** Admit the Pod (annotated as failed open) when the backend cannot be asked. */
  readonly defaultAllow: boolean;
  /** The backend's connection, read from `kubeConfigFile` once the document is checked. */
  readonly rest?: RestConfig;
}

/** Upstream's defaults and bounds: TTLs in seconds (0: default, -1: no caching), the backoff in ms. */
const TTL = { allow: { fallback: 300, min: 1, max: 1800 }, deny: { fallback: 30, min: 1, max: 1800 } } as const;
const BACKOFF = { fallback: 500, min: 1, max: 300_000 } as const;

function ttl(value: unknown, at: string, r: FieldReader, bounds: { fallback: number; min: number; max: number }): number {
  const n = r.integer(value, at, { min: -1 });
  if (n === undefined || n === 0) return bounds.fallback * 1000;
  if (n === -1) return 0;
  if (n < bounds.min || n > bounds.max) r.problem(at, `seconds from ${bounds.min} to ${bounds.max}, 0 for the default (${bounds.fallback}) or -1 for no caching`, value);
  return n * 1000;
}

/** Reads `{imagePolicy: {...}}` (optionally with upstream's apiVersion/kind ImagePolicyWebhookConfiguration) at `at`. */
export function readImagePolicyConfig(doc: unknown, at: string, r: FieldReader, groupSuffix?: string): ImagePolicyConfig {
  const fallback = { kubeConfigFile: "", allowTtlMs: 0, denyTtlMs: 0, retryBackoffMs: 0, defaultAllow: false };
  const raw = r.object(doc, at, ["apiVersion", "kind", "imagePolicy"]);
  if (!raw) return r.missing(at, "to be a configuration with `imagePolicy`") ?? fallback;
  if (raw.apiVersion !== undefined || raw.kind !== undefined) checkHeader(raw, { apiVersion: `apiserver.config.${groupNames(groupSuffix).suffix}/v1`, kind: "ImagePolicyWebhookConfiguration" }, r, at);
  const p = r.object(raw.imagePolicy, join(at, "imagePolicy"), ["kubeConfigFile", "allowTTL", "denyTTL", "retryBackoff", "defaultAllow"]);
  if (!p) return r.missing(join(at, "imagePolicy"), "to give kubeConfigFile, allowTTL, denyTTL, retryBackoff and defaultAllow") ?? fallback;
  const base = join(at, "imagePolicy");
  const kubeConfigFile = r.string(p.kubeConfigFile, join(base, "kubeConfigFile"), { nonEmpty: true }) ?? r.missing(join(base, "kubeConfigFile"), "to name the backend's client config file") ?? "";
  const backoff = r.integer(p.retryBackoff, join(base, "retryBackoff"), { min: 0 }) ?? 0;
  if (backoff !== 0 && (backoff < BACKOFF.min || backoff > BACKOFF.max)) r.problem(join(base, "retryBackoff"), `milliseconds from ${BACKOFF.min} to ${BACKOFF.max}, or 0 for the default (${BACKOFF.fallback})`, p.retryBackoff);
  return {
    kubeConfigFile,
    allowTtlMs: ttl(p.allowTTL, join(base, "allowTTL"), r, TTL.allow),
    denyTtlMs: ttl(p.denyTTL, join(base, "denyTTL"), r, TTL.deny),
    retryBackoffMs: backoff || BACKOFF.fallback,
    defaultAllow: r.boolean(p.defaultAllow, join(base, "defaultAllow"), false),
  };
}

/** Reads the backend's client config file (relative to the file that named it): a bad one stops the start here. */
export async function resolveImagePolicyConfig(config: ImagePolicyConfig, source: string, groupSuffix?: string): Promise<ImagePolicyConfig> {
  const path = resolve(dirname(source), config.kubeConfigFile);
  try {
    return { ...config, rest: await resolveRestConfig(await loadClientConfig({ explicitPath: path }), {}, { ...(groupSuffix && { groupSuffix }) }) };
  } catch (err) {
    throw new PlatformError("CONFIG_INVALID", `invalid ImagePolicyWebhook kubeConfigFile ${path}: ${(err as Error).message}`, { cause: err });
  }
}

// TracingConfiguration (apiserver.config.<suffix>/v1, apiserver.<suffix>/v1alpha1 and v1beta1): where spans go and how many are sampled.
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { apiserverConfigVersions } from "./apiserver-config-group.js";
import { FieldReader } from "../fields/reader.js";
import { MAX_SAMPLING_RATE_PER_MILLION, type TracingConfig } from "../tracing/tracer.js";

export { MAX_SAMPLING_RATE_PER_MILLION, type TracingConfig };

export const TRACING_CONFIG_KIND = "TracingConfiguration";
const WHAT = "tracing configuration";

/** The standard OTLP gRPC collector address (IANA port 4317), upstream's default. */
export const DEFAULT_TRACING_ENDPOINT = "localhost:4317";

export interface LoadedTracingConfig {
  readonly source: string;
  readonly config: TracingConfig;
  readonly warnings: readonly string[];
}

/** Every apiVersion the kind is served in (all three, as the kinds table of seed 002 §2.6). */
export function tracingApiVersions(groupSuffix?: string): string[] {
  const v = apiserverConfigVersions(groupSuffix);
  return [v.v1, v.v1beta1, v.v1alpha1];
}

const ENDPOINT = /^(?:(https?):\/\/)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):(\d{1,5})\/?$/;

/** Whether `endpoint` is `host:port`, `http://host:port` or `https://host:port` with a port 1–65535. */
export function validTracingEndpoint(endpoint: string): boolean {
  const m = ENDPOINT.exec(endpoint);
  return m !== null && Number(m[4]) >= 1 && Number(m[4]) <= 65535;
}

export function parseTracingConfig(text: string, source: string, options: ConfigLoadOptions = {}): LoadedTracingConfig {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: tracingApiVersions(options.groupSuffix), kind: TRACING_CONFIG_KIND }, r);
  r.object(doc, "", ["apiVersion", "kind", "endpoint", "samplingRatePerMillion"]);
  let endpoint = r.string(doc.endpoint, "endpoint", { nonEmpty: true }) ?? DEFAULT_TRACING_ENDPOINT;
  if (!validTracingEndpoint(endpoint)) {
    r.problem("endpoint", "a collector address `host:port` (or http://host:port, https://host:port)", endpoint);
    endpoint = DEFAULT_TRACING_ENDPOINT;
  }
  const samplingRatePerMillion = r.integer(doc.samplingRatePerMillion, "samplingRatePerMillion", { min: 0, max: MAX_SAMPLING_RATE_PER_MILLION }) ?? 0;
  // Unknown fields are errors: a misspelt `samplingRate` would silently sample nothing.
  const warnings = finish(r, { ...options, strict: options.strict ?? true }, WHAT, source);
  return { source, config: { endpoint, samplingRatePerMillion }, warnings };
}

export async function loadTracingConfig(path: string, options: ConfigLoadOptions = {}): Promise<LoadedTracingConfig> {
  return parseTracingConfig(await readConfigFile(path, WHAT), path, options);
}

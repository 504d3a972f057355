// `--tracing-config-file` and `--egress-selector-config-file` (upstream's names): read and checked before anything starts.
import type { Command } from "commander";
import type { EgressSelector } from "../apiserver/egress/index.js";
import type { ConfigLoadOptions } from "../config/config-document.js";
import { loadEgressSelectorConfig, type EgressSelectorConfig } from "../config/egress-selector.js";
import { loadTracingConfig, type TracingConfig } from "../config/tracing-config.js";
import type { Logger } from "../logger.js";
import { setDefaultTracer, startTracing, type Tracer } from "../tracing/tracer.js";

export interface TracingFlags {
  readonly tracingConfigFile?: string;
}

export interface EgressFlags {
  readonly egressSelectorConfigFile?: string;
}

export function addTracingOption(command: Command): Command {
  return command.option("--tracing-config-file <file>", "TracingConfiguration file: export spans over OTLP gRPC (endpoint, samplingRatePerMillion); nothing is traced without it");
}

export function addEgressOption(command: Command): Command {
  return command.option("--egress-selector-config-file <file>", "EgressSelectorConfiguration file: reach the control plane, etcd or the cluster through an HTTP CONNECT proxy (TCP, TLS or a Unix socket)");
}

/** A configuration file flag's document, read and checked (a bad file fails here, with nothing started); its warnings logged. */
async function readFlagFile<T>(path: string | undefined, load: (path: string, options: ConfigLoadOptions) => Promise<{ config: T; warnings: readonly string[] }>, groupSuffix: string, logger: Logger): Promise<T | undefined> {
  if (path === undefined) return undefined;
  const { config, warnings } = await load(path, { groupSuffix });
  for (const warning of warnings) logger.warn({ file: path }, warning);
  return config;
}

export const readTracingFlag = (flags: TracingFlags, groupSuffix: string, logger: Logger): Promise<TracingConfig | undefined> => readFlagFile(flags.tracingConfigFile, loadTracingConfig, groupSuffix, logger);

/** `master` is accepted, with a warning. */
export const readEgressFlag = (flags: EgressFlags, groupSuffix: string, logger: Logger): Promise<EgressSelectorConfig | undefined> => readFlagFile(flags.egressSelectorConfigFile, loadEgressSelectorConfig, groupSuffix, logger);

/** The selector of `--egress-selector-config-file` (every selection Direct without it), the proxies' TLS files read. */
export async function readEgressSelector(flags: EgressFlags, groupSuffix: string, logger: Logger): Promise<EgressSelector> {
  const egressConfig = await readEgressFlag(flags, groupSuffix, logger);
  const { createEgressSelector } = await import("../apiserver/egress/index.js");
  return createEgressSelector(egressConfig);
}

/** This process's tracer (OpenTelemetry loaded only with a configuration); shut it down at exit to send the last spans. */
export async function startProcessTracer(config: TracingConfig | undefined, serviceName: string, logger: Logger): Promise<Tracer> {
  const tracer = await startTracing(config, {
    serviceName,
    onExportError: (err) => logger.warn({ endpoint: config?.endpoint, err: { message: err.message } }, "spans could not be sent to the collector; they are dropped (reported at most once a minute)"),
  });
  setDefaultTracer(tracer);
  if (config) logger.info({ endpoint: config.endpoint, samplingRatePerMillion: config.samplingRatePerMillion }, "tracing on");
  return tracer;
}

export interface TracingAndEgress {
  /** The tracing file's settings (the controllers of `up` start their own tracer with them). */
  readonly tracing?: TracingConfig;
  readonly tracer: Tracer;
  readonly egress: EgressSelector;
}

/**
 * Both files read and checked, the egress proxies' TLS files read, and the process's tracer started: everything that
 * can fail on a bad file fails here, before the address is held or the data directory touched.
 */
export async function startTracingAndEgress(flags: TracingFlags & EgressFlags, groupSuffix: string, serviceName: string, logger: Logger): Promise<TracingAndEgress> {
  const tracing = await readTracingFlag(flags, groupSuffix, logger);
  const egress = await readEgressSelector(flags, groupSuffix, logger);
  const tracer = await startProcessTracer(tracing, serviceName, logger);
  return { ...(tracing && { tracing }), tracer, egress };
}

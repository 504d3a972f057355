// The audit flags of `apiserver` and `up` (upstream's names): the policy file, the log file and its rotation, the
// webhook's client config and batch settings, all read and checked before anything starts.
import { Option, type Command } from "commander";
import type { AuditPolicy } from "../config/audit-policy.js";
import { auditApiVersion, loadAuditPolicy } from "../config/audit-policy.js";
import type { AuditSink } from "../audit/log-backend.js";
import type { AuditBatchSettings, AuditWebhookMode } from "../apiserver/audit/webhook-backend.js";
import type { RestConfig } from "../client/rest-config.js";
import type { Dialer } from "../apiserver/webhook/client.js";
import { DURATION_SYNTAX, parseDuration } from "../fields/duration.js";
import type { Logger } from "../logger.js";
import { UsageError } from "./program.js";

export interface AuditFlags {
  readonly auditPolicyFile?: string;
  readonly auditLogPath?: string;
  readonly auditLogMaxage?: number;
  readonly auditLogMaxbackup?: number;
  readonly auditLogMaxsize?: number;
  readonly auditLogFormat?: string;
  readonly auditWebhookConfigFile?: string;
  readonly auditWebhookMode?: string;
  readonly auditWebhookBatchBufferSize?: number;
  readonly auditWebhookBatchMaxSize?: number;
  readonly auditWebhookBatchMaxWait?: number;
  readonly auditWebhookBatchThrottleEnable?: boolean;
  readonly auditWebhookBatchThrottleQps?: number;
  readonly auditWebhookBatchThrottleBurst?: number;
  readonly auditWebhookInitialBackoff?: number;
  readonly auditWebhookVersion?: string;
}

/** The webhook backend as the flags configure it (its client config already read and checked). */
export interface AuditWebhookSettings {
  readonly config: RestConfig;
  readonly mode: AuditWebhookMode;
  readonly batch: AuditBatchSettings;
  readonly initialBackoffMs: number;
  readonly apiVersion: string;
}

/** What auditing the flags ask for: the policy, and where events go. */
export interface AuditSetup {
  readonly policy: AuditPolicy;
  readonly logPath?: string;
  readonly webhook?: AuditWebhookSettings;
}

const MODES = ["batch", "blocking", "blocking-strict"] as const;

const wholeNumber = (flag: string) => (text: string): number => {
  if (!/^\d+$/.test(text)) throw new UsageError(`expected \`${flag}\` to be a whole number ≥ 0, got ${JSON.stringify(text)}`);
  return Number(text);
};
const positiveWhole = (flag: string) => (text: string): number => {
  if (!/^\d+$/.test(text) || Number(text) === 0) throw new UsageError(`expected \`${flag}\` to be a whole number ≥ 1, got ${JSON.stringify(text)}`);
  return Number(text);
};
const positiveNumber = (flag: string) => (text: string): number => {
  const n = Number(text);
  if (text.trim() === "" || !Number.isFinite(n) || n <= 0) throw new UsageError(`expected \`${flag}\` to be a number > 0, got ${JSON.stringify(text)}`);
  return n;
};
/** Milliseconds, in the one duration syntax (Go's, as upstream's flags take them). */
const durationMs = (flag: string) => (text: string): number => {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new UsageError(`expected \`${flag}\` to be ${DURATION_SYNTAX} (> 0), got ${JSON.stringify(text)}`);
  return ms;
};
/** A Go-style bool flag: `--flag`, `--flag=true`, `--flag=false`. */
const bool = (flag: string) => (text: string): boolean => {
  if (text === "true") return true;
  if (text === "false") return false;
  throw new UsageError(`expected \`${flag}\` to be true or false, got ${JSON.stringify(text)}`);
};

export function addAuditOptions(command: Command): Command {
  const opt = (flags: string, help: string, parse: (text: string) => unknown) => new Option(flags, help).argParser(parse);
  return command
    .option("--audit-policy-file <file>", "audit Policy (audit.<group-suffix>/v1): which requests are recorded, at which level; nothing is audited without it")
    .option("--audit-log-path <file>", "write audit events to this file, one JSON object a line (- for standard output)")
    .addOption(opt("--audit-log-maxage <days>", "days to keep rotated audit log files (0: no limit)", wholeNumber("--audit-log-maxage")))
    .addOption(opt("--audit-log-maxbackup <count>", "rotated audit log files to keep (0: all)", wholeNumber("--audit-log-maxbackup")))
    .addOption(opt("--audit-log-maxsize <MB>", "megabytes an audit log file grows to before it is rotated (0: 100)", wholeNumber("--audit-log-maxsize")))
    .option("--audit-log-format <format>", "json (one Event a line); upstream's legacy text format is not offered", "json")
    .option("--audit-webhook-config-file <file>", "client config file (kubeconfig format) of the audit webhook: server URL, certificate authority, client certificate or token")
    .addOption(new Option("--audit-webhook-mode <mode>", "batch: buffer and send asynchronously; blocking: the request waits for the webhook; blocking-strict: and fails when RequestReceived cannot be sent").choices(MODES).default("batch"))
    .addOption(opt("--audit-webhook-batch-buffer-size <events>", "events buffered before new ones are dropped (batch mode)", positiveWhole("--audit-webhook-batch-buffer-size")).default(10_000))
    .addOption(opt("--audit-webhook-batch-max-size <events>", "largest batch (batch mode)", positiveWhole("--audit-webhook-batch-max-size")).default(400))
    .addOption(opt("--audit-webhook-batch-max-wait <duration>", "longest wait before a batch smaller than the maximum is sent (batch mode)", durationMs("--audit-webhook-batch-max-wait")).default(30_000, "30s"))
    .addOption(opt("--audit-webhook-batch-throttle-enable [bool]", "limit the batches sent per second (batch mode)", bool("--audit-webhook-batch-throttle-enable")).default(true).preset(true))
    .addOption(opt("--audit-webhook-batch-throttle-qps <qps>", "batches per second on average (batch mode)", positiveNumber("--audit-webhook-batch-throttle-qps")).default(10))
    .addOption(opt("--audit-webhook-batch-throttle-burst <batches>", "batches sent at once when the rate was not used before (batch mode)", positiveWhole("--audit-webhook-batch-throttle-burst")).default(15))
    .addOption(opt("--audit-webhook-initial-backoff <duration>", "wait before the first retry of a failed POST (then ×1.5, 5 attempts)", durationMs("--audit-webhook-initial-backoff")).default(10_000, "10s"))
    .option("--audit-webhook-version <group/version>", "API version of the EventList sent to the webhook (default audit.<group-suffix>/v1)");
}

/**
 * The policy and backends, read and checked: a bad policy or webhook config file fails here, before the address is
 * bound or the data directory touched. Undefined when nothing is to be audited.
 */
export async function readAuditSetup(flags: AuditFlags, groupSuffix: string, logger: Logger): Promise<AuditSetup | undefined> {
  if (flags.auditLogFormat !== undefined && flags.auditLogFormat !== "json") {
    throw new UsageError(`expected \`--audit-log-format\` to be json, got ${JSON.stringify(flags.auditLogFormat)} (the legacy text format is not offered: it cannot be parsed back reliably)`);
  }
  const version = flags.auditWebhookVersion ?? auditApiVersion(groupSuffix);
  if (version !== auditApiVersion(groupSuffix)) throw new UsageError(`expected \`--audit-webhook-version\` to be ${auditApiVersion(groupSuffix)}, got ${JSON.stringify(version)}`);
  const outputs = [flags.auditLogPath && "--audit-log-path", flags.auditWebhookConfigFile && "--audit-webhook-config-file"].filter(Boolean);
  if (flags.auditPolicyFile === undefined) {
    if (outputs.length > 0) logger.warn({ flags: outputs }, `${outputs.join(" and ")} without --audit-policy-file: nothing is audited`);
    return undefined;
  }
  const { policy } = await loadAuditPolicy(flags.auditPolicyFile, { groupSuffix });
  if (outputs.length === 0) {
    logger.warn({ file: flags.auditPolicyFile }, "--audit-policy-file without --audit-log-path or --audit-webhook-config-file: events have nowhere to go, nothing is audited");
    return undefined;
  }
  const webhook = flags.auditWebhookConfigFile === undefined ? undefined : await readWebhookSettings(flags, flags.auditWebhookConfigFile, groupSuffix, version);
  return { policy, ...(flags.auditLogPath !== undefined && { logPath: flags.auditLogPath }), ...(webhook && { webhook }) };
}

async function readWebhookSettings(flags: AuditFlags, file: string, groupSuffix: string, apiVersion: string): Promise<AuditWebhookSettings> {
  const { loadWebhookConfig } = await import("../apiserver/webhook/client.js");
  const throttle = flags.auditWebhookBatchThrottleEnable !== false;
  return {
    config: await loadWebhookConfig(file, "audit webhook config", groupSuffix),
    mode: (flags.auditWebhookMode ?? "batch") as AuditWebhookMode,
    batch: {
      bufferSize: flags.auditWebhookBatchBufferSize ?? 10_000,
      maxBatchSize: flags.auditWebhookBatchMaxSize ?? 400,
      maxBatchWaitMs: flags.auditWebhookBatchMaxWait ?? 30_000,
      ...(throttle && { throttle: { qps: flags.auditWebhookBatchThrottleQps ?? 10, burst: flags.auditWebhookBatchThrottleBurst ?? 15 } }),
    },
    initialBackoffMs: flags.auditWebhookInitialBackoff ?? 10_000,
    apiVersion,
  };
}

/**
 * Opens the audit log (created 0600) and the webhook client, once every audit flag is known to be good. `dial` is
 * how the webhook's connections are opened (the egress selection's; direct without it).
 */
export async function openAuditSinks(setup: AuditSetup, flags: AuditFlags, logger: Logger, dial?: Dialer): Promise<AuditSink[]> {
  const sinks: AuditSink[] = [];
  if (setup.logPath !== undefined) {
    const { AuditLogFile } = await import("../audit/log-backend.js");
    sinks.push(new AuditLogFile({ path: setup.logPath, maxAgeDays: flags.auditLogMaxage ?? 0, maxBackups: flags.auditLogMaxbackup ?? 0, maxSizeMb: flags.auditLogMaxsize ?? 0 }));
  }
  if (setup.webhook) {
    const w = setup.webhook;
    const [{ WebhookClient }, { AuditWebhookBackend }] = await Promise.all([import("../apiserver/webhook/client.js"), import("../apiserver/audit/webhook-backend.js")]);
    // Upstream's audit webhook retries whatever the error: no receiver failure is a reason to give up on an event early.
    const client = new WebhookClient({ config: w.config, retry: { initialBackoffMs: w.initialBackoffMs }, shouldRetry: () => true, ...(dial && { dial }) });
    sinks.push(new AuditWebhookBackend({ post: (body, signal) => client.post(body, signal), release: () => client.close(), mode: w.mode, apiVersion: w.apiVersion, batch: w.batch, logger }));
  }
  return sinks;
}

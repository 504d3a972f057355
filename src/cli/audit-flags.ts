// The audit flags of `apiserver` and `up` (upstream's names): the policy file, the log file and its rotation, read before anything starts.
import { Option, type Command } from "commander";
import type { AuditPolicy } from "../config/audit-policy.js";
import { loadAuditPolicy } from "../config/audit-policy.js";
import type { AuditSink } from "../audit/log-backend.js";
import type { Logger } from "../logger.js";
import { UsageError } from "./program.js";

export interface AuditFlags {
  readonly auditPolicyFile?: string;
  readonly auditLogPath?: string;
  readonly auditLogMaxage?: number;
  readonly auditLogMaxbackup?: number;
  readonly auditLogMaxsize?: number;
  readonly auditLogFormat?: string;
}

const wholeNumber = (flag: string) => (text: string): number => {
  if (!/^\d+$/.test(text)) throw new UsageError(`expected \`${flag}\` to be a whole number ≥ 0, got ${JSON.stringify(text)}`);
  return Number(text);
};

export function addAuditOptions(command: Command): Command {
  return command
    .option("--audit-policy-file <file>", "audit Policy (audit.<group-suffix>/v1): which requests are recorded, at which level; nothing is audited without it")
    .option("--audit-log-path <file>", "write audit events to this file, one JSON object a line (- for standard output)")
    .addOption(new Option("--audit-log-maxage <days>", "days to keep rotated audit log files (0: no limit)").argParser(wholeNumber("--audit-log-maxage")))
    .addOption(new Option("--audit-log-maxbackup <count>", "rotated audit log files to keep (0: all)").argParser(wholeNumber("--audit-log-maxbackup")))
    .addOption(new Option("--audit-log-maxsize <MB>", "megabytes an audit log file grows to before it is rotated (0: 100)").argParser(wholeNumber("--audit-log-maxsize")))
    .option("--audit-log-format <format>", "json (one Event a line); upstream's legacy text format is not offered", "json");
}

/** The policy, read and checked: a bad file fails here, before the address is bound or the data directory touched. */
export async function readAuditPolicy(flags: AuditFlags, groupSuffix: string, logger: Logger): Promise<AuditPolicy | undefined> {
  if (flags.auditLogFormat !== undefined && flags.auditLogFormat !== "json") {
    throw new UsageError(`expected \`--audit-log-format\` to be json, got ${JSON.stringify(flags.auditLogFormat)} (the legacy text format is not offered: it cannot be parsed back reliably)`);
  }
  if (flags.auditPolicyFile === undefined) {
    if (flags.auditLogPath !== undefined) logger.warn({ path: flags.auditLogPath }, "--audit-log-path without --audit-policy-file: nothing is audited");
    return undefined;
  }
  const { policy } = await loadAuditPolicy(flags.auditPolicyFile, { groupSuffix });
  if (flags.auditLogPath === undefined) {
    logger.warn({ file: flags.auditPolicyFile }, "--audit-policy-file without --audit-log-path: events have nowhere to go, nothing is audited");
    return undefined;
  }
  return policy;
}

/** Opens the audit log (created 0600), once the policy is known to be good. */
export async function openAuditLog(flags: AuditFlags): Promise<AuditSink> {
  const { AuditLogFile } = await import("../audit/log-backend.js");
  return new AuditLogFile({
    path: flags.auditLogPath!,
    maxAgeDays: flags.auditLogMaxage ?? 0,
    maxBackups: flags.auditLogMaxbackup ?? 0,
    maxSizeMb: flags.auditLogMaxsize ?? 0,
  });
}

// `platformctl describe`: a human-readable page per object; CSRs show requester, signer, subject, SANs, usages, conditions and the issued certificate.
import type { Command } from "commander";
import type { ApiList, ApiObject } from "../../api/meta.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { humanDuration } from "../../apiserver/registry/resources/printing.js";
import { parseCsr } from "../../pki/csr.js";
import { type CommandModule } from "../program.js";
import { formatTable } from "../table.js";
import { withContext, type CtlContext } from "./context.js";
import { inspectCertificate, inspectionText, signerTrust, type CertificateInspection } from "./certificate-inspect.js";
import { Failures } from "./failures.js";
import { addFilenameFlags, checkFilenames, type FilenameFlags } from "./flags.js";
import { yamlText } from "./output/printer.js";
import { objectPath, pathsFor, targetsOf } from "./targets.js";

const LABEL_WIDTH = 20;

/** RFC 1123 with a numeric zone, as kubectl prints timestamps. */
export function describeTime(value: unknown): string {
  if (typeof value !== "string" || Number.isNaN(Date.parse(value))) return "<unknown>";
  return new Date(value).toUTCString().replace("GMT", "+0000");
}

const line = (label: string, value: string) => `${`${label}:`.padEnd(LABEL_WIDTH)}${value}\n`;

function mapLines(label: string, map: Record<string, string> | undefined, sep: string): string {
  const entries = Object.entries(map ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return line(label, "<none>");
  return entries.map(([k, v], i) => (i === 0 ? line(label, `${k}${sep}${v}`) : `${" ".repeat(LABEL_WIDTH)}${k}${sep}${v}\n`)).join("");
}

function header(obj: ApiObject): string {
  const m = obj.metadata;
  return (
    line("Name", m.name ?? "") +
    (m.namespace ? line("Namespace", m.namespace) : "") +
    mapLines("Labels", m.labels, "=") +
    mapLines("Annotations", m.annotations, ": ") +
    line("CreationTimestamp", describeTime(m.creationTimestamp))
  );
}

function indented(text: string, by = "  "): string {
  return text.split("\n").filter((l) => l !== "").map((l) => `${by}${l}\n`).join("");
}

/** The CSR page: the seed's fields, what the request itself asks for, and the issued certificate (or why it cannot be read). */
export function describeCsr(csr: CertificateSigningRequest, events: readonly ApiObject[], certificate?: CertificateInspection | Error): string {
  const spec = csr.spec ?? ({} as CertificateSigningRequest["spec"]);
  const conditions = csr.status?.conditions ?? [];
  const status = conditions.some((c) => c.type === "Denied") ? "Denied" : conditions.some((c) => c.type === "Approved") ? "Approved" : "Pending";
  const extra = [conditions.some((c) => c.type === "Failed") ? "Failed" : "", csr.status?.certificate ? "Issued" : "", conditions.some((c) => c.type === "Revoked") ? "Revoked" : ""].filter(Boolean);
  let out = header(csr);
  out += line("Requesting User", spec.username ?? "");
  if (spec.groups?.length) out += line("Requesting Groups", spec.groups.join(", "));
  out += line("Signer", spec.signerName ?? "");
  if (typeof spec.expirationSeconds === "number") out += line("Requested Duration", humanDuration(spec.expirationSeconds));
  out += line("Usages", (spec.usages ?? []).join(", ") || "<none>");
  out += line("Status", [status, ...extra].join(","));
  try {
    const parsed = parseCsr(Buffer.from(spec.request ?? "", "base64").toString("latin1"));
    const s = parsed.subject;
    out += "Subject:\n";
    out += indented(`Common Name:    ${s.commonName ?? ""}\nOrganization:   ${s.organizations.join(", ")}\n${s.organizationalUnits.length ? `Organizational Unit: ${s.organizationalUnits.join(", ")}\n` : ""}`, "         ");
    const sans = [
      ["DNS Names", parsed.sans.dns],
      ["IP Addresses", parsed.sans.ip],
      ["Email Addresses", parsed.sans.email],
      ["URIs", parsed.sans.uri],
    ].filter(([, v]) => (v as readonly string[]).length > 0);
    if (sans.length > 0) {
      out += "Subject Alternative Names:\n";
      for (const [label, values] of sans) out += `         ${`${label}:`.padEnd(15)}${(values as string[]).join(", ")}\n`;
    }
  } catch (err) {
    out += line("Subject", `<the request cannot be read: ${(err as Error).message}>`);
  }
  if (conditions.length === 0) out += line("Conditions", "<none>");
  else {
    out += "Conditions:\n";
    const rows = conditions.map((c) => [c.type, c.status, c.reason ?? "", c.message ?? "", describeTime(c.lastUpdateTime ?? c.lastTransitionTime)]);
    out += indented(formatTable(["Type", "Status", "Reason", "Message", "Last Update"], rows));
  }
  if (certificate instanceof Error) out += line("Certificate", `<cannot be read: ${certificate.message}>`);
  else if (certificate) out += `Certificate:\n${inspectionText(certificate, "  ")}`;
  return out + eventsText(events);
}

function eventsText(events: readonly ApiObject[]): string {
  if (events.length === 0) return "Events:  <none>\n";
  const rows = events.map((e) => [String(e.type ?? ""), String(e.reason ?? ""), describeTime(e.eventTime ?? e.metadata.creationTimestamp), String(e.reportingController ?? ""), String(e.note ?? "")]);
  return `Events:\n${indented(formatTable(["Type", "Reason", "Time", "From", "Message"], rows))}`;
}

/** Any other kind: the metadata header, then the object's own fields as YAML. */
export function describeGeneric(obj: ApiObject): string {
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = obj;
  const body = Object.keys(rest).length === 0 ? "" : yamlText(rest);
  return header(obj) + body;
}

/** Events (events group) about the object; describing works without them when they cannot be listed. */
async function eventsAbout(ctx: CtlContext, obj: ApiObject): Promise<ApiObject[]> {
  try {
    const client = await ctx.client();
    // The server selects: only the object's own Events travel, whatever the cluster's volume of Events.
    const regarding = { kind: obj.kind, name: obj.metadata.name, namespace: obj.metadata.namespace ?? "", uid: obj.metadata.uid };
    const selector = Object.entries(regarding).filter(([k, v]) => v !== undefined && (k !== "uid" || v !== "")).map(([k, v]) => `regarding.${k}=${String(v).replace(/[\\,=]/g, "\\$&")}`).join(",");
    const list = await client.request<ApiList>("GET", `/apis/${ctx.names.events}/v1/events?fieldSelector=${encodeURIComponent(selector)}`);
    return list.items.sort((a, b) => String(a.eventTime ?? "").localeCompare(String(b.eventTime ?? "")));
  } catch {
    return [];
  }
}

/** The issued certificate of a CSR with its chain checked against the signer's bundles; undefined before issuance. */
async function issuedCertificate(ctx: CtlContext, csr: CertificateSigningRequest): Promise<CertificateInspection | Error | undefined> {
  const issued = csr.status?.certificate;
  if (!issued) return undefined;
  try {
    // A bundle that cannot be listed (no right to) leaves the summary without a chain check rather than failing the page.
    const trust = await signerTrust(await ctx.client(), ctx.names, csr.spec.signerName).catch(() => undefined);
    return inspectCertificate(Buffer.from(issued, "base64").toString("latin1"), "status.certificate", trust);
  } catch (err) {
    return err as Error;
  }
}

async function run(ctx: CtlContext, args: readonly string[], flags: FilenameFlags & { selector?: string }): Promise<void> {
  const files = checkFilenames(flags, args);
  const client = await ctx.client();
  // Objects that cannot be read are reported after the pages of the others (exit 1), as kubectl does.
  const failures = new Failures();
  let objects: ApiObject[];
  if (files.length === 0 && args.length === 1) {
    // `describe csr` alone describes every object of the type, as kubectl does.
    const info = await (await ctx.discovery()).resolve(args[0]!);
    const list = await client.request<ApiList>("GET", pathsFor(client, info).collectionPath(info.namespaced ? await ctx.namespace() : undefined), undefined, { query: { labelSelector: flags.selector } });
    objects = list.items.map((o) => ({ ...o, kind: o.kind ?? info.kind }));
  } else {
    objects = [];
    for (const t of await targetsOf(ctx, args, files, flags.recursive === true, "describe")) {
      const obj = await failures.attempt(() => client.request<ApiObject>("GET", objectPath(client, t)));
      if (obj) objects.push(obj);
    }
  }
  const pages: string[] = [];
  for (const obj of objects) {
    const events = await eventsAbout(ctx, obj);
    pages.push(obj.kind === "CertificateSigningRequest" ? describeCsr(obj as CertificateSigningRequest, events, await issuedCertificate(ctx, obj as CertificateSigningRequest)) : describeGeneric(obj) + eventsText(events));
  }
  ctx.io.out(pages.join("\n"));
  failures.throwIfAny(ctx.io);
}

export const describeVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("describe")
    .description("show details of a resource or group of resources")
    .argument("[resource...]", "TYPE [NAME…] or TYPE/NAME…")
    .option("-l, --selector <selector>", "label selector when describing every object of a type");
  addFilenameFlags(cmd, "naming the objects to describe");
  cmd
    .addHelpText("after", "\nExamples:\n  platformctl describe csr alice\n  platformctl describe serviceaccounts -n platform-system\n")
    .action((args: string[], flags: FilenameFlags, self: Command) => withContext(self, (ctx) => run(ctx, args, flags)));
};

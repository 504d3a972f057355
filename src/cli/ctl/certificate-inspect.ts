// `platformctl certificate inspect`: an issued certificate (of a CSR, or in a file) in words, checked against its signer's bundle.
import { readFile } from "node:fs/promises";
import { text } from "node:stream/consumers";
import type { Command } from "commander";
import type { GroupNames } from "../../api/group.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import type { ClusterTrustBundle } from "../../api/types/trust-bundle.js";
import { humanDuration } from "../../apiserver/registry/resources/printing.js";
import type { RestClient } from "../../client/index.js";
import { PlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { certificatesOf, summarizeCertificate, verifyChain, type CertificateSummary, type ChainVerdict } from "../../pki/certificate-summary.js";
import { UsageError } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { csrResource } from "./csr-issuance.js";
import { yamlText } from "./output/printer.js";

/** What `inspect -o json|yaml` prints: the leaf's summary, the rest of the chain, and the verdict when a bundle was at hand. */
export interface CertificateInspection extends CertificateSummary {
  /** Seconds from now to notAfter (negative once expired). */
  readonly remainingSeconds: number;
  /** Subjects of the certificates after the leaf in the same text (intermediates). */
  readonly chain: readonly string[];
  readonly verification?: ChainVerdict & { readonly trustBundles: readonly string[] };
}

export interface TrustSource {
  /** Names of the bundles (or file) the anchors came from. */
  readonly names: readonly string[];
  readonly pem: string;
  /** Why there are no anchors to check against, when there are none. */
  readonly absent?: string;
}

export function inspectCertificate(pem: string, where: string, trust: TrustSource | undefined, now = new Date()): CertificateInspection {
  const ders = certificatesOf(pem, where);
  const summary = summarizeCertificate(ders[0]!);
  const chain = ders.slice(1).map((der) => summarizeCertificate(der).subject);
  const remainingSeconds = Math.floor((summary.notAfter.getTime() - now.getTime()) / 1000);
  if (trust === undefined) return { ...summary, remainingSeconds, chain };
  if (trust.absent !== undefined) return { ...summary, remainingSeconds, chain, verification: { verified: false, reason: trust.absent, trustBundles: [] } };
  const anchors = trust.pem.includes("-----BEGIN") ? certificatesOf(trust.pem, trust.names.join(", ")) : [];
  return { ...summary, remainingSeconds, chain, verification: { ...verifyChain(ders, anchors, now), trustBundles: trust.names } };
}

/** The anchors every ClusterTrustBundle of `signerName` publishes. */
export async function signerTrust(client: RestClient, names: GroupNames, signerName: string): Promise<TrustSource> {
  const bundles = client.resource<ClusterTrustBundle>({ group: names.certificates, version: "v1beta1", plural: "clustertrustbundles", namespaced: false });
  const list = await bundles.list({ fieldSelector: `spec.signerName=${signerName}` });
  if (list.items.length === 0) return { names: [], pem: "", absent: `no ClusterTrustBundle is published for signer ${signerName}` };
  return { names: list.items.map((b) => `ClusterTrustBundle ${b.metadata.name}`), pem: list.items.map((b) => b.spec.trustBundle).join("\n") };
}

function remaining(seconds: number): string {
  return seconds >= 0 ? `expires in ${humanDuration(seconds)}` : `expired ${humanDuration(-seconds)} ago`;
}

function verdictText(v: NonNullable<CertificateInspection["verification"]>): string {
  if (v.verified) return `verified against ${v.trustBundles.join(", ")} (anchor ${v.anchor})`;
  return v.trustBundles.length === 0 ? `NOT verified: ${v.reason}` : `NOT verified against ${v.trustBundles.join(", ")}: ${v.reason}`;
}

/** The text page, `label:` padded to `width` (describe csr indents it under `Certificate:`). */
export function inspectionText(i: CertificateInspection, indent = "", width = 22): string {
  const sans = [
    ...i.subjectAltNames.dns.map((n) => `DNS:${n}`),
    ...i.subjectAltNames.ip.map((n) => `IP:${n}`),
    ...i.subjectAltNames.email.map((n) => `email:${n}`),
    ...i.subjectAltNames.uri.map((n) => `URI:${n}`),
  ];
  const key = [i.publicKey.algorithm, i.publicKey.curve ?? (i.publicKey.bits !== undefined ? String(i.publicKey.bits) : undefined)].filter(Boolean).join(" ");
  const rows: [string, string][] = [
    ["Subject", i.subject || "<empty>"],
    ["Subject Alt Names", sans.join(", ") || "<none>"],
    ["Issuer", `${i.issuer}${i.selfSigned ? " (self-signed)" : ""}`],
    ["Serial Number", i.serialNumber],
    ["Not Before", rfc3339(i.notBefore)],
    ["Not After", `${rfc3339(i.notAfter)} (${remaining(i.remainingSeconds)})`],
    ["Public Key", key],
    ["Signature Algorithm", i.signatureAlgorithm],
    ["Key Usages", i.keyUsages.join(", ") || "<none>"],
    ["Extended Key Usages", i.extendedKeyUsages.join(", ") || "<none>"],
    ["CA", i.isCa ? `true${i.pathLen !== undefined ? ` (path length ${i.pathLen})` : ""}` : "false"],
    ["SHA-256 Fingerprint", i.sha256Fingerprint],
  ];
  if (i.chain.length > 0) rows.push(["Intermediates", i.chain.join("; ")]);
  if (i.verification) rows.push(["Chain", verdictText(i.verification)]);
  return rows.map(([label, value]) => `${indent}${`${label}:`.padEnd(width)}${value}\n`).join("");
}

interface InspectFlags {
  readonly filename?: string;
  readonly trustBundle?: string;
  readonly output?: string;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return path === "-" ? await text(process.stdin) : await readFile(path, "latin1");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read ${what} ${path === "-" ? "from stdin" : path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
}

async function run(ctx: CtlContext, name: string | undefined, flags: InspectFlags): Promise<void> {
  if (flags.output !== undefined && flags.output !== "json" && flags.output !== "yaml") throw new UsageError(`--output must be json or yaml, got ${JSON.stringify(flags.output)}`);
  if ((name === undefined) === (flags.filename === undefined)) throw new UsageError("name one certificate signing request, or give -f FILE (not both)");
  let inspection: CertificateInspection;
  if (flags.filename !== undefined) {
    const trust = flags.trustBundle === undefined ? undefined : { names: [flags.trustBundle], pem: await readText(flags.trustBundle, "trust bundle") };
    inspection = inspectCertificate(await readText(flags.filename, "certificate file"), flags.filename, trust);
  } else {
    const client = await ctx.client();
    const csr = await client.resource<CertificateSigningRequest>(csrResource(ctx.names)).get(name!);
    const issued = csr.status?.certificate;
    if (!issued) {
      throw new PlatformError("NOT_FOUND", `certificate signing request ${name} has no certificate yet: see platformctl describe csr ${name} (it must be approved, then issued by its signer)`);
    }
    const trust =
      flags.trustBundle !== undefined
        ? { names: [flags.trustBundle], pem: await readText(flags.trustBundle, "trust bundle") }
        : await signerTrust(client, ctx.names, csr.spec.signerName);
    inspection = inspectCertificate(Buffer.from(issued, "base64").toString("latin1"), `status.certificate of ${name}`, trust);
  }
  if (flags.output === "json") ctx.io.out(`${JSON.stringify(inspection, null, 2)}\n`);
  else if (flags.output === "yaml") ctx.io.out(yamlText(JSON.parse(JSON.stringify(inspection))));
  else ctx.io.out(inspectionText(inspection));
  // A chain that does not verify is worth a non-zero exit: scripts check it.
  if (inspection.verification && !inspection.verification.verified) throw new PlatformError("TLS_VERIFY_FAILED", `the certificate does not verify: ${inspection.verification.reason}`);
}

export function addInspectCommand(certificate: Command): void {
  certificate
    .command("inspect")
    .description("show an issued certificate: subject, SANs, issuer, serial, validity, key, usages, CA flag, and whether it verifies against its signer's ClusterTrustBundle")
    .argument("[name]", "CertificateSigningRequest whose status.certificate to show")
    .option("-f, --filename <file>", "a PEM certificate file instead (leaf first, then intermediates; - reads stdin)")
    .option("--trust-bundle <file>", "PEM anchors to verify against (default for a CSR: its signer's ClusterTrustBundles)")
    .option("-o, --output <format>", "json or yaml instead of the text page")
    .addHelpText(
      "after",
      "\nExit code 1 when the chain does not verify against the bundle.\n\nExamples:\n  platformctl certificate inspect node-1\n  platformctl certificate inspect -f node-1.crt --trust-bundle ca.pem -o json\n",
    )
    .action((name: string | undefined, flags: InspectFlags, self: Command) => withContext(self, (ctx) => run(ctx, name, flags)));
}

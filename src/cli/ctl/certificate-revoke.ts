// `platformctl certificate revoke NAME --reason R`: revokes an issued CSR's certificate through /revocation;
// `--serial HEX --signer NAME`: revokes a certificate issued offline by creating a CertificateRevocation.
import type { Command } from "commander";
import { REVOCATION_REASONS, REVOCATION_SUBRESOURCE, isRevocationReason, revocationCondition } from "../../api/revocation.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import {
  CERTIFICATE_REVOCATION_KIND,
  CERTIFICATE_REVOCATION_PLURAL,
  CERTIFICATE_REVOCATION_VERSION,
  certificateRevocationName,
  normalizeSerialHex,
  type CertificateRevocation,
} from "../../api/types/certificate-revocation.js";
import { UsageError } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { csrResource } from "./csr-issuance.js";
import { addOutputFlags, outputOf, type OutputFlags } from "./flags.js";
import { printObject, qualifiedName } from "./output/printer.js";

interface RevokeFlags extends OutputFlags {
  readonly reason: string;
  readonly message?: string;
  readonly serial?: string;
  readonly signer?: string;
}

/** A revocation by serial: the name is derived from signer and serial, so revoking twice is the server's 409. */
async function runRevokeSerial(ctx: CtlContext, serialText: string, signerName: string, flags: RevokeFlags): Promise<void> {
  const serialNumber = normalizeSerialHex(serialText);
  if (serialNumber === undefined) throw new UsageError(`--serial must be a serial number in hex (e.g. 5F:0C:1A), got ${JSON.stringify(serialText)}`);
  const { spec, print } = outputOf(flags);
  const group = ctx.names.certificates;
  const revocations = (await ctx.client()).resource<CertificateRevocation>({ group, version: CERTIFICATE_REVOCATION_VERSION, plural: CERTIFICATE_REVOCATION_PLURAL, namespaced: false });
  const created = await revocations.create({
    apiVersion: `${group}/${CERTIFICATE_REVOCATION_VERSION}`,
    kind: CERTIFICATE_REVOCATION_KIND,
    metadata: { name: certificateRevocationName(signerName, serialNumber) },
    spec: { signerName, serialNumber, reason: flags.reason, ...(flags.message ? { message: flags.message } : {}) },
  });
  ctx.io.out(spec.format === "default" ? `${qualifiedName(created)} created\n` : printObject(spec, created, print));
}

async function runRevoke(ctx: CtlContext, name: string | undefined, flags: RevokeFlags): Promise<void> {
  if (!isRevocationReason(flags.reason)) throw new UsageError(`--reason must be one of ${REVOCATION_REASONS.join(", ")}, got ${JSON.stringify(flags.reason)}`);
  if (flags.serial !== undefined || flags.signer !== undefined) {
    if (name !== undefined) throw new UsageError("give either a CSR name or --serial with --signer, not both");
    if (flags.serial === undefined || flags.signer === undefined) throw new UsageError("--serial and --signer go together");
    return runRevokeSerial(ctx, flags.serial, flags.signer, flags);
  }
  if (name === undefined) throw new UsageError("give the name of a CSR, or --serial HEX --signer NAME for a certificate issued offline");
  const { spec, print } = outputOf(flags);
  const csrs = (await ctx.client()).resource<CertificateSigningRequest>(csrResource(ctx.names));
  const csr = await csrs.get(name);
  // The server decides (already revoked: 409, never issued: 422); the resourceVersion makes a concurrent write a 409.
  const conditions = [...(csr.status?.conditions ?? []), revocationCondition(flags.reason, flags.message)];
  const revoked = await csrs.update({ ...csr, status: { ...csr.status, conditions } }, { subresource: REVOCATION_SUBRESOURCE });
  ctx.io.out(spec.format === "default" ? `${qualifiedName(revoked)} revoked\n` : printObject(spec, revoked, print));
}

export function addRevokeCommand(certificate: Command): void {
  const cmd = certificate
    .command("revoke")
    .description("revoke the certificate issued to a certificate signing request (adds the Revoked condition through /revocation)")
    .argument("[name]", "CSR name (or --serial and --signer)")
    .requiredOption("--reason <reason>", `RFC 5280 reason: ${REVOCATION_REASONS.join(", ")}`)
    .option("--message <text>", "why, in words (kept in the condition after the serial)")
    .option("--serial <hex>", "revoke a certificate issued offline by its serial number (creates a CertificateRevocation)")
    .option("--signer <name>", "with --serial: the signer whose CA issued the certificate");
  addOutputFlags(cmd, "json|yaml|name|jsonpath=…|go-template=…");
  cmd
    .addHelpText(
      "after",
      "\nNeeds the revoke verb on the CSR's signer. The API server refuses the certificate at once; the signer's CRL lists it\n(docs/revocation.md). A revocation is permanent.\n\nExamples:\n  platformctl certificate revoke alice --reason keyCompromise --message \"laptop stolen\"\n  platformctl certificate revoke --serial 5F:0C:1A --signer platform.io/apiserver-client --reason keyCompromise\n",
    )
    .action((name: string | undefined, flags: RevokeFlags, self: Command) => withContext(self, (ctx) => runRevoke(ctx, name, flags)));
}

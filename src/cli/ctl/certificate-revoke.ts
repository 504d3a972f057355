// `platformctl certificate revoke NAME --reason R`: revokes an issued CSR's certificate through /revocation.
import type { Command } from "commander";
import { REVOCATION_REASONS, REVOCATION_SUBRESOURCE, isRevocationReason, revocationCondition } from "../../api/revocation.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { UsageError } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { csrResource } from "./csr-issuance.js";
import { addOutputFlags, outputOf, type OutputFlags } from "./flags.js";
import { printObject, qualifiedName } from "./output/printer.js";

interface RevokeFlags extends OutputFlags {
  readonly reason: string;
  readonly message?: string;
}

async function runRevoke(ctx: CtlContext, name: string, flags: RevokeFlags): Promise<void> {
  if (!isRevocationReason(flags.reason)) throw new UsageError(`--reason must be one of ${REVOCATION_REASONS.join(", ")}, got ${JSON.stringify(flags.reason)}`);
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
    .argument("<name>", "CSR name")
    .requiredOption("--reason <reason>", `RFC 5280 reason: ${REVOCATION_REASONS.join(", ")}`)
    .option("--message <text>", "why, in words (kept in the condition after the serial)");
  addOutputFlags(cmd, "json|yaml|name|jsonpath=…|go-template=…");
  cmd
    .addHelpText(
      "after",
      "\nNeeds the revoke verb on the CSR's signer. The API server refuses the certificate at once; the signer's CRL lists it\n(docs/revocation.md). A revocation is permanent.\n\nExamples:\n  platformctl certificate revoke alice --reason keyCompromise --message \"laptop stolen\"\n",
    )
    .action((name: string, flags: RevokeFlags, self: Command) => withContext(self, (ctx) => runRevoke(ctx, name, flags)));
}

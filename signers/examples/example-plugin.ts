// Example signer plug-in: example.com/short-lived issues client certificates that live one hour at most.
//
// Load it with `loadSignerPlugin("signers/examples/example-plugin.js", { options: { caCertFile, caKeyFile } })`.
// A plug-in outside this repository imports the same names from "platform-ca/signers".
import { invalidOption } from "../../src/errors.js";
import { CaSigner } from "../ca-signer.js";
import { defaultPlan } from "../issue-plan.js";
import type { SignerPluginContext } from "../plugin.js";
import { usageProblem } from "../rules.js";
import type { Signer } from "../signer.js";

export const SIGNER_NAME = "example.com/short-lived";
export const LIFETIME_SECONDS = 3600;

const USAGES = { allowed: ["digital signature", "key encipherment", "client auth"], required: ["digital signature", "client auth"] };

export async function createSigner(context: SignerPluginContext): Promise<Signer> {
  const { caCertFile, caKeyFile } = context.options;
  if (typeof caCertFile !== "string" || caCertFile === "") throw invalidOption("caCertFile", "to be a file path", caCertFile);
  if (typeof caKeyFile !== "string" || caKeyFile === "") throw invalidOption("caKeyFile", "to be a file path", caKeyFile);
  const ca = await context.loadCa({ certFile: caCertFile, keyFile: caKeyFile });
  return new CaSigner({
    signerName: SIGNER_NAME,
    ca,
    maxDurationSeconds: context.maxDurationSeconds,
    now: context.now,
    logger: context.logger,
    check(request) {
      if (request.csr.subject.commonName === undefined) return `signer ${SIGNER_NAME} needs a common name naming the client`;
      return usageProblem(SIGNER_NAME, request.usages, USAGES);
    },
    // Shorter requests are honoured; longer ones, and requests without expirationSeconds, get one hour.
    plan: (request) => ({ ...defaultPlan(request), expirationSeconds: Math.min(request.expirationSeconds ?? LIFETIME_SECONDS, LIFETIME_SECONDS) }),
  });
}

// Built-in signer for client certificates that authenticate to the API server (never for system:masters).
import { builtinSigner, type BuiltinSignerOptions } from "./builtin-signer.js";
import type { CaSigner } from "./ca-signer.js";
import type { RequestRule } from "../src/pki/pool-rules.js";
import { usageProblem, type UsageRule } from "./rules.js";

export const MASTERS_GROUP = "system:masters";
const USAGES: UsageRule = { allowed: ["digital signature", "key encipherment", "client auth"], required: ["client auth"] };

/** Any subject and SANs; usages within digital signature, key encipherment and client auth, client auth required. */
export function apiserverClientRules(signerName: string): RequestRule {
  return (request) => {
    if (request.csr.subject.organizations.includes(MASTERS_GROUP)) {
      return `signer ${signerName} does not issue certificates for organization "${MASTERS_GROUP}"; request a narrower group`;
    }
    return usageProblem(signerName, request.usages, USAGES);
  };
}

export function createApiserverClientSigner(options: BuiltinSignerOptions): CaSigner {
  return builtinSigner(options, "apiserverClient", apiserverClientRules);
}

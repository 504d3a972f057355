// Built-in signer for the serving certificates of node-agent TLS endpoints the API server connects to.
import { builtinSigner, type BuiltinSignerOptions } from "./builtin-signer.js";
import type { CaSigner } from "./ca-signer.js";
import type { RequestRule } from "../src/pki/pool-rules.js";
import { forbiddenSanProblem, nodeSubjectProblem, usageProblem, type UsageRule } from "./rules.js";

const USAGES: UsageRule = { allowed: ["digital signature", "server auth", "key encipherment"], required: ["digital signature", "server auth"] };

/** O exactly [system:nodes], CN system:node:<name>, at least one DNS or IP SAN and no email/URI/other SANs. */
export function nodeagentServingRules(signerName: string): RequestRule {
  return ({ csr, usages }) => {
    const subject = nodeSubjectProblem(signerName, csr);
    if (subject) return subject;
    if (csr.sans.dns.length === 0 && csr.sans.ip.length === 0) {
      return `signer ${signerName} needs at least one DNS or IP subject alternative name naming the node`;
    }
    return forbiddenSanProblem(signerName, csr, ["email", "URI", "other-name"]) ?? usageProblem(signerName, usages, USAGES);
  };
}

export function createNodeagentServingSigner(options: BuiltinSignerOptions): CaSigner {
  return builtinSigner(options, "nodeagentServing", nodeagentServingRules);
}

// Built-in signer for the client certificates node agents use to authenticate to the API server.
import { builtinSigner, type BuiltinSignerOptions } from "./builtin-signer.js";
import type { CaSigner } from "./ca-signer.js";
import type { RequestRule } from "../src/pki/pool-rules.js";
import { ALL_SAN_KINDS, forbiddenSanProblem, nodeSubjectProblem, usageProblem, type UsageRule } from "./rules.js";

const USAGES: UsageRule = { allowed: ["digital signature", "client auth", "key encipherment"], required: ["digital signature", "client auth"] };

/** O exactly [system:nodes], CN system:node:<name>, no SANs of any kind, usages {digital signature, client auth} (+ key encipherment). */
export function nodeagentClientRules(signerName: string): RequestRule {
  return (request) =>
    nodeSubjectProblem(signerName, request.csr) ??
    forbiddenSanProblem(signerName, request.csr, ALL_SAN_KINDS) ??
    usageProblem(signerName, request.usages, USAGES);
}

export function createNodeagentClientSigner(options: BuiltinSignerOptions): CaSigner {
  return builtinSigner(options, "nodeagentClient", nodeagentClientRules);
}

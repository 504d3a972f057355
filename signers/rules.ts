// Rule checks shared by the built-in and example signers; each returns a reason a person can act on, or undefined.
import type { ParsedCsr } from "../src/pki/types.js";

export const NODES_GROUP = "system:nodes";
export const NODE_USER_PREFIX = "system:node:";

export interface UsageRule {
  /** Every usage outside this list is refused; listed in the order messages show them. */
  readonly allowed: readonly string[];
  readonly required: readonly string[];
}

export function usageProblem(signerName: string, usages: readonly string[], rule: UsageRule): string | undefined {
  for (const usage of usages) {
    if (!rule.allowed.includes(usage)) {
      return `usage ${JSON.stringify(usage)} is not allowed for signer ${signerName}; allowed: ${rule.allowed.join(", ")}`;
    }
  }
  for (const usage of rule.required) {
    if (!usages.includes(usage)) {
      return `usage ${JSON.stringify(usage)} is required by signer ${signerName}; requested: ${usages.join(", ") || "none"}`;
    }
  }
  return undefined;
}

/** Node identities: O exactly [system:nodes] and CN `system:node:<name>` with a non-empty name. */
export function nodeSubjectProblem(signerName: string, csr: ParsedCsr): string | undefined {
  const orgs = csr.subject.organizations;
  if (orgs.length !== 1 || orgs[0] !== NODES_GROUP) {
    return `signer ${signerName} needs organization exactly ["${NODES_GROUP}"], got ${JSON.stringify(orgs)}`;
  }
  const cn = csr.subject.commonName;
  if (cn === undefined || !cn.startsWith(NODE_USER_PREFIX) || cn.length === NODE_USER_PREFIX.length) {
    return `signer ${signerName} needs common name "${NODE_USER_PREFIX}<node name>", got ${cn === undefined ? "none" : JSON.stringify(cn)}`;
  }
  return undefined;
}

/** The SAN kinds a CSR carries, with counts, for "no SANs of this kind" rules. */
export function sanKindsPresent(csr: ParsedCsr): { readonly kind: string; readonly values: readonly string[] }[] {
  const { dns, ip, email, uri, other } = csr.sans;
  const kinds = [
    { kind: "DNS", values: dns },
    { kind: "IP", values: ip },
    { kind: "email", values: email },
    { kind: "URI", values: uri },
    { kind: "other-name", values: other.map((tag) => `[${tag}]`) },
  ];
  return kinds.filter((k) => k.values.length > 0);
}

export function forbiddenSanProblem(signerName: string, csr: ParsedCsr, forbidden: readonly string[]): string | undefined {
  const found = sanKindsPresent(csr).find((k) => forbidden.includes(k.kind));
  return found && `signer ${signerName} does not allow ${found.kind} subject alternative names, got ${found.values.join(", ")}`;
}

export const ALL_SAN_KINDS: readonly string[] = ["DNS", "IP", "email", "URI", "other-name"];

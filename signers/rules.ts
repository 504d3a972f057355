// Rule checks shared by the built-in and example signers; each returns a reason a person can act on, or undefined.
import type { RequestFields } from "../src/pki/pool-rules.js";
import type { ParsedCsr } from "../src/pki/types.js";
import { findDuplicateUsages, isKnownUsage } from "../src/pki/usages.js";
import { MIN_EXPIRATION_SECONDS } from "../src/pki/validity.js";

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

/** The checks every CA-backed signer makes of the spec fields: its own name, known and distinct usages, a valid lifetime. */
export function requestProblem(signerName: string, request: RequestFields): string | undefined {
  if (request.signerName !== signerName) {
    return `the request names signer ${request.signerName}, not ${signerName}`;
  }
  if (request.usages.length === 0) return `signer ${signerName} needs at least one usage in spec.usages`;
  const unknown = request.usages.find((u) => !isKnownUsage(u));
  if (unknown !== undefined) return `usage ${JSON.stringify(unknown)} is not a known usage`;
  const duplicate = findDuplicateUsages(request.usages)[0];
  if (duplicate !== undefined) return `usage ${JSON.stringify(duplicate)} is listed more than once`;
  const seconds = request.expirationSeconds;
  if (seconds !== undefined && (!Number.isSafeInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS)) {
    return `expirationSeconds must be a whole number of at least ${MIN_EXPIRATION_SECONDS}, got ${seconds}`;
  }
  return undefined;
}

// Checks one request against a compiled signer policy; each refusal names the rule and what would pass.
import { DerReader, Tag } from "../src/pki/der.js";
import { OID } from "../src/pki/oids.js";
import type { NameAttribute, ParsedCsr } from "../src/pki/types.js";
import { formatDurationSeconds as formatDuration } from "../src/fields/duration.js";
import { sameUsage, SAN_KINDS, type SanKind, type SignerPolicy } from "./policy-schema.js";
import type { SigningRequest } from "./signer.js";

export interface CaRequest {
  readonly isCa: boolean;
  readonly pathLen?: number;
}

/** The BasicConstraints a CSR asks for; undefined when the extension cannot be read. */
export function requestedCa(csr: ParsedCsr): CaRequest | undefined {
  const ext = csr.extensions.find((e) => e.oid === OID.basicConstraints);
  if (ext === undefined) return { isCa: false };
  try {
    const bc = new DerReader(ext.value).sequence("basicConstraints");
    const isCa = bc.peekTag() === Tag.BOOLEAN ? bc.boolean("cA") : false;
    const pathLen = bc.peekTag() === Tag.INTEGER ? bc.smallInteger("pathLenConstraint") : undefined;
    bc.finish("basicConstraints");
    return pathLen === undefined ? { isCa } : { isCa, pathLen };
  } catch {
    return undefined;
  }
}

/** Whether a subject attribute is allowed by `subject.permitted` (always, when the policy permits any subject). */
export function attributePermitted(policy: SignerPolicy, attribute: NameAttribute): boolean {
  const rule = policy.subject.permitted?.get(attribute.oid);
  return policy.subject.permitted === undefined || (rule !== undefined && rule.matches(attribute.value));
}

export function policyProblem(policy: SignerPolicy, request: SigningRequest): string | undefined {
  return caProblem(policy, request) ?? subjectProblem(policy, request.csr) ?? sanProblem(policy, request.csr)
    ?? extensionProblem(policy, request.csr) ?? usagesProblem(policy, request.usages) ?? lifetimeProblem(policy, request);
}

function caProblem(policy: SignerPolicy, request: SigningRequest): string | undefined {
  const name = policy.signerName;
  const wanted = requestedCa(request.csr);
  if (wanted === undefined) return "the requested BasicConstraints extension cannot be read";
  const certSign = request.usages.some((u) => sameUsage(u, "cert sign"));
  if (wanted.isCa && !policy.caCertificates.allowCa) return `signer ${name} does not issue CA certificates; remove BasicConstraints CA=true from the request`;
  if (!wanted.isCa && certSign) {
    return policy.caCertificates.allowCa
      ? `usage "cert sign" needs a CA certificate; request BasicConstraints CA=true`
      : `usage "cert sign" is only for CA certificates, which signer ${name} does not issue`;
  }
  if (wanted.isCa && !certSign) return `a CA certificate needs usage "cert sign"`;
  const max = policy.caCertificates.maxPathLen;
  if (wanted.isCa && max !== undefined && wanted.pathLen !== undefined && wanted.pathLen > max) {
    return `requested path length ${wanted.pathLen} is above the maximum ${max} of signer ${name}`;
  }
  return undefined;
}

function subjectProblem(policy: SignerPolicy, csr: ParsedCsr): string | undefined {
  const { permitted, required, onForbiddenSubject } = policy.subject;
  const kept: NameAttribute[] = [];
  for (const attribute of csr.subject.rdns.flat()) {
    if (attributePermitted(policy, attribute)) {
      kept.push(attribute);
      continue;
    }
    if (onForbiddenSubject === "strip") continue;
    const rule = permitted?.get(attribute.oid);
    const label = attribute.shortName ?? attribute.oid;
    return rule === undefined
      ? `subject attribute ${label} is not permitted by signer ${policy.signerName}; permitted: ${[...permitted!.values()].map((r) => r.name).join(", ")}`
      : `subject ${label} ${JSON.stringify(attribute.value)} is not permitted by signer ${policy.signerName}; permitted: ${rule.patterns.join(", ")}`;
  }
  const missing = required.find((r) => !kept.some((a) => a.oid === r.oid));
  return missing && `subject attribute ${missing.name} is required by signer ${policy.signerName}${onForbiddenSubject === "strip" ? " (with a permitted value)" : ""}`;
}

const SAN_LABELS: Readonly<Record<SanKind, string>> = { dns: "DNS name", ip: "IP address", email: "email address", uri: "URI" };

function sanProblem(policy: SignerPolicy, csr: ParsedCsr): string | undefined {
  const sans = policy.subjectAltNames;
  const name = policy.signerName;
  for (const kind of SAN_KINDS) {
    const values = csr.sans[kind];
    const rule = sans[kind];
    const label = SAN_LABELS[kind];
    if (values.length > 0 && rule === undefined) return `signer ${name} does not permit ${label} subject alternative names, got ${values.join(", ")}`;
    for (const value of values) {
      if (kind === "dns" && value.includes("*") && !sans.dns?.allowWildcardNames) return `wildcard ${label} ${JSON.stringify(value)} is not permitted by signer ${name}`;
      if (rule!.isForbidden(value)) return `${label} ${JSON.stringify(value)} is forbidden by signer ${name} (forbidden: ${rule!.forbidden.join(", ")})`;
      if (!rule!.isPermitted(value)) return `${label} ${JSON.stringify(value)} is not permitted by signer ${name}; permitted: ${rule!.permitted.join(", ")}`;
    }
  }
  if (csr.sans.other.length > 0 && !sans.otherNames) {
    return `signer ${name} does not permit subject alternative names other than DNS, IP, email and URI (got tags ${csr.sans.other.join(", ")})`;
  }
  const missing = sans.required.find((kind) => csr.sans[kind].length === 0);
  if (missing) return `signer ${name} requires at least one ${SAN_LABELS[missing]} subject alternative name`;
  const count = SAN_KINDS.reduce((n, kind) => n + csr.sans[kind].length, csr.sans.other.length);
  if (count < sans.minCount) return `signer ${name} requires at least ${sans.minCount} subject alternative names, got ${count}`;
  if (sans.maxCount !== undefined && count > sans.maxCount) return `signer ${name} allows at most ${sans.maxCount} subject alternative names, got ${count}`;
  return undefined;
}

function extensionProblem(policy: SignerPolicy, csr: ParsedCsr): string | undefined {
  const requested = new Set(csr.extensions.map((e) => e.oid));
  const forbidden = policy.extensions.forbidden.find((oid) => requested.has(oid));
  if (forbidden) return `requested extension ${forbidden} is forbidden by signer ${policy.signerName}`;
  const missing = policy.extensions.required.find((oid) => !requested.has(oid));
  return missing && `signer ${policy.signerName} requires the request to carry extension ${missing}`;
}

function usagesProblem(policy: SignerPolicy, usages: readonly string[]): string | undefined {
  const { required, permitted, forbidden } = policy.usages;
  const name = policy.signerName;
  for (const usage of usages) {
    if (forbidden.some((f) => sameUsage(f, usage))) return `usage ${JSON.stringify(usage)} is forbidden by signer ${name}`;
    const allowed = permitted && [...required, ...permitted];
    if (allowed && !allowed.some((a) => sameUsage(a, usage))) return `usage ${JSON.stringify(usage)} is not allowed for signer ${name}; allowed: ${allowed.join(", ")}`;
  }
  const missing = required.find((r) => !usages.some((u) => sameUsage(u, r)));
  return missing && `usage ${JSON.stringify(missing)} is required by signer ${name}; requested: ${usages.join(", ")}`;
}

function lifetimeProblem(policy: SignerPolicy, request: SigningRequest): string | undefined {
  const min = policy.lifetime.minimumSeconds;
  const asked = request.expirationSeconds;
  if (min === undefined || asked === undefined || asked >= min) return undefined;
  return `requested lifetime ${formatDuration(asked)} (expirationSeconds ${asked}) is below the minimum ${formatDuration(min)} of signer ${policy.signerName}`;
}

/** min(request or default, policy maximum); the cluster maximum and the CA NotAfter apply later. */
export function policyLifetime(policy: SignerPolicy, request: SigningRequest): number | undefined {
  const { defaultSeconds, maximumSeconds } = policy.lifetime;
  const wanted = request.expirationSeconds ?? defaultSeconds;
  if (wanted === undefined) return maximumSeconds;
  return maximumSeconds === undefined ? wanted : Math.min(wanted, maximumSeconds);
}

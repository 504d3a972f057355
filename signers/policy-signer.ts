// The custom signer: a CA-backed signer whose rules, lifetime, CA requests and trust come from a policy.
import { PlatformError } from "../src/errors.js";
import type { CertificateProfile } from "../src/pki/types.js";
import { resolveUsages } from "../src/pki/usages.js";
import type { CaBackingOptions } from "./ca-backing.js";
import { CaSigner, type TrustPublication } from "./ca-signer.js";
import type { IssuePlan } from "./issue-plan.js";
import type { SignerPolicy } from "./policy-schema.js";
import { attributePermitted, policyLifetime, policyProblem, requestedCa } from "./policy-rules.js";
import type { SigningRequest } from "./signer.js";
import { keepSubjectAttributes } from "./subject-strip.js";

export type PolicySignerOptions = CaBackingOptions;

/** A signer for `policy.signerName` issuing from `options.ca` (a CaKeyPair or a CaSource). */
export function createPolicySigner(policy: SignerPolicy, options: PolicySignerOptions): CaSigner {
  return new CaSigner({
    ...options,
    signerName: policy.signerName,
    check: (request) => policyProblem(policy, request),
    plan: (request) => planFor(policy, request),
    publish: publication(policy),
  });
}

function publication(policy: SignerPolicy): TrustPublication {
  if (policy.trust.publish !== "files") return policy.trust.publish;
  if (policy.trust.pems === undefined) {
    throw new PlatformError("POLICY_INVALID", `trust.files of signer ${policy.signerName} have not been read; load the policy with loadPolicyFile`);
  }
  return { pems: policy.trust.pems };
}

function planFor(policy: SignerPolicy, request: SigningRequest): IssuePlan {
  const ca = requestedCa(request.csr) ?? { isCa: false };
  const maxPathLen = policy.caCertificates.maxPathLen;
  const pathLen = ca.pathLen === undefined ? maxPathLen : Math.min(ca.pathLen, maxPathLen ?? ca.pathLen);
  const profile: CertificateProfile = {
    usages: resolveUsages(request.usages),
    isCa: ca.isCa,
    ...(ca.isCa && pathLen !== undefined && { pathLen }),
    includeSans: true,
    copyExtensions: [...policy.extensions.required, ...policy.extensions.permitted],
  };
  const csr = policy.subject.onForbiddenSubject === "strip"
    ? { ...request.csr, subject: keepSubjectAttributes(request.csr.subject, (a) => attributePermitted(policy, a)) }
    : request.csr;
  const expirationSeconds = policyLifetime(policy, request);
  return expirationSeconds === undefined ? { csr, profile } : { csr, profile, expirationSeconds };
}

// What a CA signer issues for an accepted request: the plan, the default profile per usage list, the validity window.
import { toPlatformError, type PlatformError } from "../src/errors.js";
import type { CaKeyPair, CertificateProfile, ParsedCsr, Validity } from "../src/pki/types.js";
import { resolveUsages } from "../src/pki/usages.js";
import { computeValidity } from "../src/pki/validity.js";
import type { SigningRequest } from "./signer.js";

/** What to issue for an accepted request. */
export interface IssuePlan {
  /** The CSR to issue from (a policy may rewrite its subject). */
  readonly csr: ParsedCsr;
  readonly profile: CertificateProfile;
  /** Lifetime to ask for before the cluster maximum and the CA NotAfter apply; undefined for the maximum. */
  readonly expirationSeconds?: number;
}

export function defaultPlan(request: SigningRequest): IssuePlan {
  const profile = defaultProfile(request.usages);
  return request.expirationSeconds === undefined
    ? { csr: request.csr, profile }
    : { csr: request.csr, profile, expirationSeconds: request.expirationSeconds };
}

/** Default profiles by usage list: one object per list, which the issuers' template caches and the pool's batches key on. */
const PROFILES = new Map<string, CertificateProfile>();

export function defaultProfile(usages: readonly string[]): CertificateProfile {
  const key = usages.join("\n");
  let profile = PROFILES.get(key);
  if (profile === undefined) {
    profile = { usages: resolveUsages(usages), isCa: false, includeSans: true };
    if (PROFILES.size >= 64) PROFILES.clear();
    PROFILES.set(key, profile);
  }
  return profile;
}

/** The validity of a certificate issued at `now`, or the error (CA expired...) computeValidity gives. */
export function windowOf(ca: CaKeyPair, now: Date, expirationSeconds: number | undefined, maxDurationSeconds: number): Validity | PlatformError {
  try {
    return computeValidity({ now, ...(expirationSeconds !== undefined && { expirationSeconds }), maxDurationSeconds, caNotBefore: ca.notBefore, caNotAfter: ca.notAfter });
  } catch (error) {
    return toPlatformError(error);
  }
}

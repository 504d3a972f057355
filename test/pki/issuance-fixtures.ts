// Shared builders for the issuance tests: the fixed instant, profiles and external tool runners.
import { resolveUsages } from "../../src/pki/usages.js";
import type { CertificateProfile, Validity } from "../../src/pki/types.js";
import { run } from "../fixtures/process.js";

/** A fixed instant every test clock starts from. */
export const T0 = new Date("2030-01-01T00:00:00Z");

/** A day from T0: the window of the pool and native issuance tests. */
export const DAY_FROM_T0: Validity = { notBefore: T0, notAfter: new Date(T0.getTime() + 86_400_000) };

export interface ProfileOptions {
  readonly usages?: readonly string[];
  readonly isCa?: boolean;
  readonly pathLen?: number;
  readonly includeSans?: boolean;
  readonly copyExtensions?: readonly string[];
}

/** A profile from seed usage strings; defaults to a client certificate with SANs copied. */
export function profile(o: ProfileOptions = {}): CertificateProfile {
  return {
    usages: resolveUsages(o.usages ?? ["digital signature", "key encipherment", "client auth"]),
    isCa: o.isCa ?? false,
    ...(o.pathLen !== undefined && { pathLen: o.pathLen }),
    includeSans: o.includeSans ?? true,
    ...(o.copyExtensions && { copyExtensions: o.copyExtensions }),
  };
}

/** `openssl x509 -text` of a PEM certificate. */
export function opensslText(pem: string): string {
  return run("openssl", ["x509", "-noout", "-text"], pem);
}

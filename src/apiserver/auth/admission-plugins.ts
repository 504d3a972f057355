// The built-in admission plugins in the order they run.
import type { MutatingPlugin, ValidatingPlugin } from "./admission.js";
import { csrApprovalPlugin } from "./admission-csr-approval.js";
import { csrRequesterPlugin } from "./admission-csr-requester.js";
import { csrRevocationPlugin } from "./admission-csr-revocation.js";
import { csrSigningPlugin } from "./admission-csr-signing.js";
import { csrSubjectRestrictionPlugin } from "./admission-csr-subject-restriction.js";
import { trustBundleAttestPlugin } from "./admission-trust-bundle-attest.js";

export function defaultAdmissionPlugins(): { readonly mutating: MutatingPlugin[]; readonly validating: ValidatingPlugin[] } {
  return {
    mutating: [csrRequesterPlugin],
    validating: [csrSubjectRestrictionPlugin, csrApprovalPlugin, csrRevocationPlugin, csrSigningPlugin, trustBundleAttestPlugin],
  };
}

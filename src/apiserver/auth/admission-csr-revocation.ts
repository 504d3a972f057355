// Admission (validating): revoking a CSR's certificate through /revocation needs `revoke` on its signer.
import { REVOCATION_SUBRESOURCE } from "../../api/revocation.js";
import { admissionForbidden, authorizedForSigner, specOf, targets, type ValidatingPlugin } from "./admission.js";

export const csrRevocationPlugin: ValidatingPlugin = {
  name: "CertificateRevocation",
  async admit(a, obj, old, ctx) {
    if (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", REVOCATION_SUBRESOURCE)) return;
    // The spec is immutable: the stored signerName is the one whose certificates are revoked.
    const signerName = specOf(old ?? obj)?.signerName;
    if (typeof signerName !== "string" || !(await authorizedForSigner(ctx, a.user, "revoke", signerName))) {
      throw admissionForbidden(a, `user not permitted to revoke certificates of signerName ${JSON.stringify(signerName ?? "")}`);
    }
  },
};

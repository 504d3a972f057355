// Admission (validating): revoking a certificate needs `revoke` on its signer, whether through a CSR's /revocation or
// by creating a CertificateRevocation (a revocation by serial).
import { REVOCATION_SUBRESOURCE } from "../../api/revocation.js";
import { CERTIFICATE_REVOCATION_PLURAL } from "../../api/types/certificate-revocation.js";
import { requireSignerPermission, specOf, targets, type ValidatingPlugin } from "./admission.js";

export const csrRevocationPlugin: ValidatingPlugin = {
  name: "CertificateRevocation",
  admit(a, obj, old, ctx) {
    const bySerial = a.operation === "CREATE" && targets(a, ctx.names, CERTIFICATE_REVOCATION_PLURAL);
    if (!bySerial && (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", REVOCATION_SUBRESOURCE))) return;
    // A CSR's spec is immutable: the stored signerName is the one whose certificates are revoked.
    const signerName = specOf(bySerial ? obj : (old ?? obj))?.signerName;
    return requireSignerPermission(a, ctx, "revoke", signerName, "revoke certificates of signerName");
  },
};

// Admission (validating): approving or denying a CSR through /approval needs `approve` on its signer.
import { requireSignerPermission, specOf, targets, type ValidatingPlugin } from "./admission.js";

export const csrApprovalPlugin: ValidatingPlugin = {
  name: "CertificateApproval",
  admit(a, obj, old, ctx) {
    if (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", "approval")) return;
    // The spec is immutable: the stored signerName is the one the approval is for. The signer is also recorded in the
    // audit event, even at Metadata level (which records no body).
    const signerName = specOf(old ?? obj)?.signerName;
    return requireSignerPermission(a, ctx, "approve", signerName, "approve requests with signerName", `certificateapproval.admission.${ctx.names.suffix}/signer-name`);
  },
};

// Admission (validating): approving or denying a CSR through /approval needs `approve` on its signer.
import { admissionForbidden, authorizedForSigner, specOf, targets, type ValidatingPlugin } from "./admission.js";

export const csrApprovalPlugin: ValidatingPlugin = {
  name: "CertificateApproval",
  async admit(a, obj, old, ctx) {
    if (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", "approval")) return;
    // The spec is immutable: the stored signerName is the one the approval is for.
    const signerName = specOf(old ?? obj)?.signerName;
    if (typeof signerName !== "string" || !(await authorizedForSigner(ctx, a.user, "approve", signerName, a.deadline))) {
      throw admissionForbidden(a, `user not permitted to approve requests with signerName ${JSON.stringify(signerName ?? "")}`);
    }
    // The signer an approval is for, in the audit event even at Metadata level (which records no body).
    a.annotate?.(`certificateapproval.admission.${ctx.names.suffix}/signer-name`, signerName);
  },
};

// Admission (validating): setting or changing status.certificate through /status needs `sign` on the CSR's signer.
import type { ApiObject } from "../../api/meta.js";
import { admissionForbidden, authorizedForSigner, specOf, targets, type ValidatingPlugin } from "./admission.js";

function certificateOf(obj: ApiObject | undefined): unknown {
  const status = obj?.status as { certificate?: unknown } | undefined;
  return status?.certificate ?? "";
}

export const csrSigningPlugin: ValidatingPlugin = {
  name: "CertificateSigning",
  async admit(a, obj, old, ctx) {
    if (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", "status")) return;
    // Conditions alone (Failed) need no signer permission; only the certificate does.
    if (certificateOf(obj) === certificateOf(old)) return;
    const signerName = specOf(old ?? obj)?.signerName;
    if (typeof signerName !== "string" || !(await authorizedForSigner(ctx, a.user, "sign", signerName, a.deadline))) {
      throw admissionForbidden(a, `user not permitted to sign requests with signerName ${JSON.stringify(signerName ?? "")}`);
    }
    a.annotate?.(`certificatesigning.admission.${ctx.names.suffix}/signer-name`, signerName);
  },
};

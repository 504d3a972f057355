// Admission (validating): setting or changing status.certificate through /status needs `sign` on the CSR's signer.
import type { ApiObject } from "../../api/meta.js";
import { requireSignerPermission, specOf, targets, type ValidatingPlugin } from "./admission.js";

function certificateOf(obj: ApiObject | undefined): unknown {
  const status = obj?.status as { certificate?: unknown } | undefined;
  return status?.certificate ?? "";
}

export const csrSigningPlugin: ValidatingPlugin = {
  name: "CertificateSigning",
  admit(a, obj, old, ctx) {
    if (a.operation !== "UPDATE" || !targets(a, ctx.names, "certificatesigningrequests", "status")) return;
    // Conditions alone (Failed) need no signer permission; only the certificate does.
    if (certificateOf(obj) === certificateOf(old)) return;
    const signerName = specOf(old ?? obj)?.signerName;
    return requireSignerPermission(a, ctx, "sign", signerName, "sign requests with signerName", `certificatesigning.admission.${ctx.names.suffix}/signer-name`);
  },
};

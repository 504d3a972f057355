// Admission (validating): writing a ClusterTrustBundle tied to a signer needs `attest` on that signer (seed 000 §2 rule 2).
import { requireSignerPermission, specOf, targets, type ValidatingPlugin } from "./admission.js";

export const trustBundleAttestPlugin: ValidatingPlugin = {
  name: "ClusterTrustBundleAttest",
  admit(a, obj, old, ctx) {
    if ((a.operation !== "CREATE" && a.operation !== "UPDATE") || !targets(a, ctx.names, "clustertrustbundles")) return;
    const spec = specOf(obj);
    const signerName = spec?.signerName;
    if (signerName === undefined || signerName === "") return;
    const before = specOf(old);
    // An update that leaves signer and anchors as they were (labels, finalizers, storage migration) attests nothing new.
    if (a.operation === "UPDATE" && before?.signerName === signerName && before?.trustBundle === spec?.trustBundle) return;
    return requireSignerPermission(a, ctx, "attest", signerName, "attest for signerName");
  },
};

// Admission (mutating): a new CertificateSigningRequest records who asked for it; whatever the client sent there is replaced.
import type { MutatingPlugin } from "./admission.js";
import { specOf, targets } from "./admission.js";

const REQUESTER_FIELDS = ["username", "uid", "groups", "extra"] as const;

export const csrRequesterPlugin: MutatingPlugin = {
  name: "CertificateSigningRequestRequester",
  admit(a, obj, _old, ctx) {
    if (a.operation !== "CREATE" || !targets(a, ctx.names, "certificatesigningrequests")) return;
    const spec = specOf(obj);
    if (!spec) return;
    for (const field of REQUESTER_FIELDS) delete spec[field];
    // Signers and approvers trust these fields, so they come from the authenticated request only.
    const { username, uid, groups, extra } = a.user;
    spec.username = username;
    if (uid) spec.uid = uid;
    if (groups && groups.length > 0) spec.groups = [...groups];
    if (extra && Object.keys(extra).length > 0) spec.extra = Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, [...v]]));
  },
};

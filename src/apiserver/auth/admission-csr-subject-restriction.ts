// Admission (validating): the apiserver-client signer never issues to the `system:masters` group.
import { Buffer } from "node:buffer";
import { parseCsr } from "../../pki/csr.js";
import type { ParsedCsr } from "../../pki/types.js";
import { admissionForbidden, specOf, targets, type ValidatingPlugin } from "./admission.js";
import { SYSTEM_MASTERS } from "./identity.js";

/** The CSR in `spec.request` (base64 of PEM), or undefined when it does not parse: validation refuses those. */
function requestOf(request: unknown): ParsedCsr | undefined {
  if (typeof request !== "string") return undefined;
  try {
    return parseCsr(Buffer.from(request, "base64").toString("latin1"));
  } catch {
    return undefined;
  }
}

export const csrSubjectRestrictionPlugin: ValidatingPlugin = {
  name: "CertificateSubjectRestriction",
  admit(a, obj, _old, ctx) {
    if (a.operation !== "CREATE" || !targets(a, ctx.names, "certificatesigningrequests")) return;
    const spec = specOf(obj);
    const signerName = ctx.names.signers.apiserverClient;
    if (spec?.signerName !== signerName) return;
    const csr = requestOf(spec.request);
    if (csr?.subject.organizations.includes(SYSTEM_MASTERS)) {
      throw admissionForbidden(a, `use of the ${signerName} signer with the ${SYSTEM_MASTERS} group is not allowed`);
    }
  },
};

// CertificateRevocation: definition and strategy (the name is derived from signer and serial, so a second revocation
// of one certificate is the storage's 409 AlreadyExists; the spec is immutable, as a revocation is permanent).
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { REVOCATION_REASONS, isRevocationReason } from "../../../api/revocation.js";
import {
  CERTIFICATE_REVOCATION_KIND,
  CERTIFICATE_REVOCATION_PLURAL,
  CERTIFICATE_REVOCATION_VERSION,
  certificateRevocationName,
  normalizeSerialHex,
  type CertificateRevocationSpec,
} from "../../../api/types/certificate-revocation.js";
import { kindSchema } from "../../../api/schema.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { invalid, notSupported, required, validateSignerName } from "../validation.js";
import { buildStrategy, immutableFields, specChanged, defineResource, isRecord } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, orNone, since } from "./printing.js";

const spec = (obj: ApiObject): Partial<CertificateRevocationSpec> | undefined => obj.spec as Partial<CertificateRevocationSpec> | undefined;

function validateRevocation(obj: ApiObject): FieldError[] {
  const s = spec(obj);
  if (!s) return [required("spec")];
  const errors: FieldError[] = [];
  const signerName = s.signerName ?? "";
  if (signerName === "") errors.push(required("spec.signerName"));
  else errors.push(...validateSignerName("spec.signerName", signerName));
  const serial = normalizeSerialHex(s.serialNumber ?? "");
  if ((s.serialNumber ?? "") === "") errors.push(required("spec.serialNumber"));
  else if (serial === undefined) errors.push(invalid("spec.serialNumber", s.serialNumber, "must be a certificate serial number in hex (at most 32 bytes), e.g. 5f0c1a or 5F:0C:1A"));
  if ((s.reason ?? "") === "") errors.push(required("spec.reason"));
  else if (!isRevocationReason(s.reason)) errors.push(notSupported("spec.reason", s.reason, REVOCATION_REASONS));
  const name = obj.metadata.name;
  if (name && signerName !== "" && serial !== undefined) {
    const wanted = certificateRevocationName(signerName, serial);
    if (name !== wanted) errors.push(invalid("metadata.name", name, `a CertificateRevocation of serial ${serial} for signerName ${signerName} must be named ${wanted}`));
  }
  return errors;
}

const strategy = buildStrategy({
  schema: kindSchema(CERTIFICATE_REVOCATION_KIND),
  // Stored in the one form certificates are matched by (lower-case hex, no separators), whatever the client sent.
  prepareForCreate(obj) {
    const s = obj.spec;
    if (!isRecord(s) || typeof s.serialNumber !== "string") return;
    const serial = normalizeSerialHex(s.serialNumber);
    if (serial !== undefined) s.serialNumber = serial;
  },
  validate: validateRevocation,
  validateUpdate: (next, previous) => immutableFields(next, previous, ["spec.signerName", "spec.serialNumber", "spec.reason", "spec.message"]),
  specChanged,
});

export function certificateRevocationDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.certificates,
    version: CERTIFICATE_REVOCATION_VERSION,
    kind: CERTIFICATE_REVOCATION_KIND,
    plural: CERTIFICATE_REVOCATION_PLURAL,
    shortNames: ["certrev"],
    namespaced: false,
    // Names carry ':' (from the signer name); the exact name is checked against the spec by validate.
    nameRule: "path-segment",
    fieldSelectors: { "spec.signerName": (obj) => spec(obj)?.signerName ?? "" },
    columns: [
      nameColumn,
      column("Signer", "Signer whose certificate is revoked."),
      column("Serial", "Serial number of the revoked certificate, hex."),
      column("Reason", "RFC 5280 reason of the revocation."),
      ageColumn,
    ],
    row: (obj, now) => [obj.metadata.name, orNone(spec(obj)?.signerName), orNone(spec(obj)?.serialNumber), orNone(spec(obj)?.reason), since(obj.metadata.creationTimestamp, now)],
    strategy,
  });
}

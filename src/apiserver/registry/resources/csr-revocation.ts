// CertificateSigningRequest `/revocation` rules: an issued certificate is revoked once, with an RFC 5280 reason.
import type { ApiObject } from "../../../api/meta.js";
import { REVOCATION_REASONS, REVOKED_CONDITION, isRevocationReason } from "../../../api/revocation.js";
import { PlatformError } from "../../../errors.js";
import { decodePem } from "../../../pki/pem.js";
import { revocationIdOf } from "../../../pki/revocation-id.js";
import type { FieldError } from "../strategy.js";
import { decodeBase64, forbidden, index, notSupported } from "../validation.js";
import { conditionsOf, view } from "./csr-rules.js";
import { isRecord } from "./strategy-kit.js";

/** The serial of the issued leaf, or undefined when none is issued or it cannot be read (validation reports that). */
export function issuedSerial(obj: ApiObject): string | undefined {
  const bytes = decodeBase64(view(obj).status?.certificate ?? "");
  if (!bytes || bytes.length === 0) return undefined;
  try {
    const leaf = decodePem(bytes.toString("latin1"), { label: "CERTIFICATE" })[0];
    return leaf ? revocationIdOf(leaf.der).serialHex : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Records the revoked serial in a newly added `Revoked` condition's message (`serial <HEX>: <message>`), so the
 * object says which certificate it revoked even when read without parsing the certificate.
 */
export function recordRevokedSerial(next: ApiObject, previous: ApiObject): void {
  if (conditionsOf(previous).some((c) => c.type === REVOKED_CONDITION)) return;
  const serial = issuedSerial(previous);
  if (serial === undefined) return;
  for (const c of conditionsOf(next)) {
    if (!isRecord(c) || c.type !== REVOKED_CONDITION) continue;
    const text = typeof c.message === "string" && c.message !== "" ? c.message : `revoked: ${String(c.reason ?? "")}`;
    c.message = `serial ${serial}: ${text}`;
  }
}

/** 409 when already revoked; otherwise the field errors of a revocation (never issued, unknown reason). */
export function validateRevocation(next: ApiObject, previous: ApiObject): FieldError[] {
  const before = conditionsOf(previous).find((c) => c.type === REVOKED_CONDITION);
  if (before) {
    throw new PlatformError(
      "CONFLICT",
      `certificatesigningrequest ${JSON.stringify(previous.metadata.name)} is already revoked (${before.reason ?? "unspecified"} at ${before.lastTransitionTime ?? "an earlier time"})`,
      { details: { name: previous.metadata.name ?? "", kind: "certificatesigningrequests" } },
    );
  }
  const errors: FieldError[] = [];
  conditionsOf(next).forEach((c, i) => {
    if (!isRecord(c) || c.type !== REVOKED_CONDITION) return;
    if (!isRevocationReason(c.reason)) errors.push(notSupported(`${index("status.conditions", i)}.reason`, c.reason ?? "", REVOCATION_REASONS));
    if (issuedSerial(previous) === undefined) {
      errors.push(forbidden("status.conditions", "only a request with an issued certificate can be revoked"));
    }
  });
  return errors;
}

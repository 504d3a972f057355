// CertificateRevocation (certificates group, v1): the revocation of one certificate by its signer and serial, for
// certificates issued outside the API (offline), which have no CertificateSigningRequest to carry a Revoked condition.
import type { ApiObject, ApiList } from "../meta.js";

export const CERTIFICATE_REVOCATION_KIND = "CertificateRevocation";
export const CERTIFICATE_REVOCATION_VERSION = "v1";
export const CERTIFICATE_REVOCATION_PLURAL = "certificaterevocations";

export interface CertificateRevocationSpec {
  readonly signerName: string;
  /** Hex of the serial's value, lower-case, without separators or leading zero bytes (stored so by the server). */
  readonly serialNumber: string;
  /** An RFC 5280 CRLReason name (`REVOCATION_REASONS`). */
  readonly reason: string;
  readonly message?: string;
}

export interface CertificateRevocation extends ApiObject {
  spec: CertificateRevocationSpec;
}

export type CertificateRevocationList = ApiList<CertificateRevocation>;

/**
 * The serial as stored: lower-case hex of the value, separators (`:`, spaces) dropped, leading zeros dropped and
 * padded to whole bytes, as `revocationIdOf` reads it from a certificate. Undefined for anything that is not hex.
 */
export function normalizeSerialHex(text: string): string | undefined {
  const hex = text.replace(/[:\s]/g, "").toLowerCase();
  if (!/^[0-9a-f]+$/.test(hex) || hex.length > 64) return undefined;
  const value = hex.replace(/^0+/, "") || "0";
  return value.length % 2 === 1 ? `0${value}` : value;
}

/** The one name a revocation of `serialHex` (normalized) for `signerName` may have: `example.com:foo:<serial>`. */
export function certificateRevocationName(signerName: string, serialHex: string): string {
  return `${signerName.replaceAll("/", ":")}:${serialHex}`;
}

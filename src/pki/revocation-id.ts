// The identity a revocation names (RFC 5280: issuer name + serial number), read from a certificate the same way
// by the API (to record the serial), the API server (to check a presented certificate) and the CRL builder.
import { Buffer } from "node:buffer";
import { readCertificateFacts } from "./ca.js";

export interface RevocationId {
  /** Upper-case hex of the serial's value, without a sign byte, as openssl prints it. */
  readonly serialHex: string;
  /** The serial's DER INTEGER contents (sign byte kept), for writing into a CRL. */
  readonly serialContents: Uint8Array;
  /** The DER of the issuer Name. */
  readonly issuerDer: Uint8Array;
  readonly notAfter: Date;
}

export function revocationIdOf(certificateDer: Uint8Array): RevocationId {
  const facts = readCertificateFacts(certificateDer);
  const serial = facts.serialNumber;
  const value = serial[0] === 0 && serial.length > 1 ? serial.subarray(1) : serial;
  return { serialHex: Buffer.from(value).toString("hex").toUpperCase(), serialContents: serial, issuerDer: facts.issuerDer, notAfter: facts.notAfter };
}

/** One string per (issuer, serial): the key of revocation sets. */
export const revocationKey = (id: Pick<RevocationId, "issuerDer" | "serialHex">): string => `${Buffer.from(id.issuerDer).toString("hex")}/${id.serialHex}`;

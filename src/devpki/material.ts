// Dev PKI files on disk: what a CA or leaf pair holds now (the facts planning needs), and loading an existing CA.
import { createHash } from "node:crypto";
import { PlatformError } from "../errors.js";
import { caFromPem, readCertificateFacts } from "../pki/ca.js";
import { decodePem } from "../pki/pem.js";
import type { CaKeyPair } from "../pki/types.js";
import { readOptional, type PairPaths } from "../pki/files.js";
import type { Observation } from "./plan.js";

/** The pair as read from disk: texts plus the facts planning needs; undefined when either file is missing. */
export interface FoundPair extends Observation {
  readonly certPem: string;
  readonly keyPem: string;
}

/** sha256 (hex) of DER bytes: how state records name a certificate. */
export function sha256Hex(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("hex");
}

/**
 * Reads a pair. A leaf certificate that does not parse counts as missing, so it is issued again; a CA's stops
 * the run (`isCa`), since replacing a CA invalidates everything it issued.
 */
export async function findPair(paths: PairPaths, isCa = false): Promise<FoundPair | undefined> {
  const [certPem, keyPem] = await Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
  if (certPem === undefined || keyPem === undefined) return undefined;
  try {
    return { certPem, keyPem, ...certificateObservation(certPem, paths.cert) };
  } catch (err) {
    if (isCa) throw brokenCa(paths, err);
    return undefined;
  }
}

/** Loads an existing CA pair; broken CA files stop the run instead of being replaced behind the user's back. */
export function loadFoundCa(found: FoundPair, paths: PairPaths): CaKeyPair {
  try {
    return caFromPem(found.certPem, found.keyPem, { certName: paths.cert, keyName: paths.key });
  } catch (err) {
    throw brokenCa(paths, err);
  }
}

function brokenCa(paths: PairPaths, err: unknown): PlatformError {
  return new PlatformError("CA_INVALID", `${(err as Error).message}; delete ${paths.cert} and ${paths.key} to create a new CA`, { cause: err });
}

/** Facts of the first certificate in a PEM text; `where` names the text in the error when there is none. */
export function certificateObservation(certPem: string, where = "certificate text"): Observation {
  const der = decodePem(certPem, { label: "CERTIFICATE" })[0]?.der;
  if (der === undefined) throw new PlatformError("PEM_INVALID", `${where} holds no certificate`);
  const facts = readCertificateFacts(der);
  return { sha256: sha256Hex(der), notBefore: facts.notBefore, notAfter: facts.notAfter };
}

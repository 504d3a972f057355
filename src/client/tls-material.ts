// Reads and checks TLS material for the client: CA bundles and client certificate/key pairs, from files or data.
import { readFile } from "node:fs/promises";
import { isPlatformError, PlatformError } from "../errors.js";
import { loadPrivateKey, privateKeyMatchesCertificate } from "../pki/keys.js";
import { decodePem } from "../pki/pem.js";

/** One PEM input and how messages name it (`--client-key` or `client config F: users[0].user.client-key`). */
export interface PemSource {
  readonly where: string;
  readonly path?: string;
  readonly data?: string;
}

function invalid(where: string, message: string, cause?: unknown): PlatformError {
  return new PlatformError("CONFIG_INVALID", `${where}: ${message}`, { cause });
}

export async function readPemSource(source: PemSource): Promise<string> {
  if (source.data !== undefined) return source.data;
  try {
    return await readFile(source.path!, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw invalid(source.where, `cannot read ${source.path} (${code})`, err);
  }
}

/** PEM text holding at least one certificate, refused with a message naming its source otherwise. */
export function checkCertificates(pem: string, where: string): string {
  let labels: string[];
  try {
    labels = decodePem(pem).map((b) => b.label);
  } catch (err) {
    throw invalid(where, isPlatformError(err) ? err.message : String(err), err);
  }
  if (!labels.includes("CERTIFICATE")) throw invalid(where, "holds no PEM CERTIFICATE block");
  return pem;
}

export async function readCaBundle(source: PemSource): Promise<string> {
  return checkCertificates(await readPemSource(source), source.where);
}

/** A client certificate and its key: both present, both parse, and the key belongs to the certificate. */
export async function readClientPair(cert: PemSource, key: PemSource): Promise<{ cert: string; key: string }> {
  const certPem = checkCertificates(await readPemSource(cert), cert.where);
  const keyPem = await readPemSource(key);
  checkClientPair(certPem, keyPem, cert.where, key.where);
  return { cert: certPem, key: keyPem };
}

export function checkClientPair(certPem: string, keyPem: string, certWhere: string, keyWhere: string): void {
  let matches: boolean;
  try {
    const privateKey = loadPrivateKey(keyPem);
    matches = privateKeyMatchesCertificate(privateKey, certPem);
  } catch (err) {
    const where = isPlatformError(err, "CERT_INVALID") ? certWhere : keyWhere;
    throw invalid(where, isPlatformError(err) ? err.message : String(err), err);
  }
  if (!matches) throw invalid(keyWhere, `the private key does not belong to the certificate of ${certWhere}`);
}

// The serving certificate of the controllers' ops endpoint: given files, or a self-signed pair (kept in a directory, or in memory), as upstream's --cert-dir.
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { ensureDir, pairPaths, readOptional, writePair } from "../pki/files.js";
import { mintLeaf } from "../pki/leaf.js";
import { PlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import { generateCa } from "../pki/ca.js";
import { loadPrivateKey, privateKeyMatchesCertificate } from "../pki/keys.js";
import { expiryProblem, servingNames } from "../apiserver/bootstrap/pki.js";

export interface OpsTlsOptions {
  /** PEM certificate (chain) and key files; both or neither. */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** Where a self-signed pair is kept across restarts when no files are given; in memory without it. */
  readonly certDir?: string;
  /** The listen host, named in a generated certificate beside localhost and the loopback addresses. */
  readonly host: string;
  readonly now?: () => Date;
  readonly logger: Logger;
}

export interface OpsServingPair {
  readonly certPem: string;
  readonly keyPem: string;
  /** Where it came from, for the log. */
  readonly source: string;
}

/** The self-signed pair's file names in a cert dir (upstream: kube-controller-manager.crt/.key). */
export const OPS_PAIR_NAME = "platform-ca-controller-manager";
const LIFETIME_SECONDS = 365 * 86_400;

/** Why a pair cannot serve (undefined when it can): it must parse, belong together, and not be near its end. */
function pairProblem(certPem: string, keyPem: string, now: Date): string | undefined {
  try {
    const cert = new X509Certificate(certPem);
    if (!privateKeyMatchesCertificate(loadPrivateKey(keyPem), cert)) return "the key does not belong to the certificate";
    return expiryProblem(new Date(cert.validTo), now);
  } catch (err) {
    return `it cannot be read (${(err as Error).message})`;
  }
}

/** A self-signed CA and a serving certificate from it, as upstream's controller manager makes when given none. */
async function selfSigned(host: string, now: Date): Promise<{ certPem: string; keyPem: string }> {
  const stamp = Math.floor(now.getTime() / 1000);
  const made = await generateCa({ commonName: `${OPS_PAIR_NAME}-ca@${stamp}`, keyType: "p256", lifetimeSeconds: LIFETIME_SECONDS, now });
  const leaf = await mintLeaf({ commonName: `${OPS_PAIR_NAME}@${stamp}`, ...servingNames(host), keyType: "p256", usages: ["digital signature", "key encipherment", "server auth"], lifetimeSeconds: LIFETIME_SECONDS, ca: made.ca, now });
  return { certPem: leaf.certPem, keyPem: leaf.keyPem };
}

/** Reads the given pair, or reuses or makes a self-signed one. Bad given files stop the start naming the file. */
export async function opsServingPair(o: OpsTlsOptions): Promise<OpsServingPair> {
  const now = (o.now ?? (() => new Date()))();
  if ((o.certFile === undefined) !== (o.keyFile === undefined)) {
    throw new PlatformError("CONFIG_INVALID", "the ops serving certificate and key files go together (--tls-cert-file and --tls-private-key-file)");
  }
  if (o.certFile !== undefined && o.keyFile !== undefined) {
    const read = (path: string) =>
      readFile(path, "utf8").catch((err: unknown) => {
        throw new PlatformError("IO_ERROR", `cannot read ${path}: ${(err as Error).message}`, { cause: err });
      });
    const [certPem, keyPem] = await Promise.all([read(o.certFile), read(o.keyFile)]);
    const problem = pairProblem(certPem, keyPem, now);
    // A certificate near its end still serves (an operator renews it); one that cannot serve stops the start.
    if (problem && !problem.startsWith("it expires")) throw new PlatformError("CONFIG_INVALID", `the ops serving certificate ${o.certFile}: ${problem}`);
    if (problem) o.logger.warn({ cert: o.certFile }, `the ops serving certificate ${problem}`);
    return { certPem, keyPem, source: o.certFile };
  }
  if (o.certDir === undefined) return { ...(await selfSigned(o.host, now)), source: "self-signed, in memory" };
  const paths = pairPaths(o.certDir, OPS_PAIR_NAME);
  const [certPem, keyPem] = await Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
  if (certPem !== undefined && keyPem !== undefined && pairProblem(certPem, keyPem, now) === undefined) return { certPem, keyPem, source: paths.cert };
  const made = await selfSigned(o.host, now);
  await ensureDir(o.certDir);
  await writePair(paths, made.certPem, made.keyPem);
  o.logger.info({ cert: paths.cert }, "created a self-signed serving certificate for health and metrics");
  return { ...made, source: paths.cert };
}

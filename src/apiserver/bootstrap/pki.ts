// The data directory's PKI: the cluster CA and the API server's serving certificate, created on first start and reused.
import { randomBytes, X509Certificate } from "node:crypto";
import { chmod, link, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { isIP } from "node:net";
import { join } from "node:path";
import { invalidOption, PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { ensureDir, ioError, pairPaths, readOptional, writePair, type PairPaths } from "../../pki/files.js";
import { mintLeaf } from "../../pki/leaf.js";
import { caFromPem, generateCa } from "../../pki/ca.js";
import { loadPrivateKey, privateKeyMatchesCertificate } from "../../pki/keys.js";
import { isWrappedKey, keyWrapper, unwrapKeyText, wrapKeyPem } from "../../pki/wrapped-key.js";
import type { CaKeyPair } from "../../pki/types.js";
import { SA_KEY_FILE } from "../auth/sa-signing-key.js";

export const PKI_DIR = "pki";
/** A certificate this close to its end is replaced at start. */
export const RENEW_WITHIN_SECONDS = 30 * 86_400;
export const CA_LIFETIME_SECONDS = 10 * 365 * 86_400;
export const SERVING_LIFETIME_SECONDS = 365 * 86_400;
const CA_COMMON_NAME = "platform-ca cluster CA";
const SERVING_COMMON_NAME = "platform-ca-apiserver";
const SERVING_USAGES = ["digital signature", "key encipherment", "server auth"];

export interface PkiOptions {
  readonly dataDir: string;
  /** The host the server listens on; the serving certificate must name it. */
  readonly listenHost: string;
  readonly now?: () => Date;
  readonly logger?: Logger;
}

export interface ServingNames {
  readonly dns: readonly string[];
  readonly ip: readonly string[];
}

export type PkiAction = "created" | "kept" | "reissued";

export interface DataDirPki {
  /** `<data-dir>/pki`, mode 0700. */
  readonly dir: string;
  /** The cluster CA files: the built-in signers issue with them and client certificates are checked against them. */
  readonly caFiles: { readonly certFile: string; readonly keyFile: string };
  readonly ca: CaKeyPair;
  readonly serving: { readonly certFile: string; readonly keyFile: string; readonly certPem: string; readonly keyPem: string };
  readonly actions: { readonly ca: Exclude<PkiAction, "reissued">; readonly serving: PkiAction };
}

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", ""]);

/** SANs of the serving certificate: loopback names, the listen host, and this machine's name when listening everywhere. */
export function servingNames(listenHost: string): ServingNames {
  const dns = new Set(["localhost"]);
  const ip = new Set(["127.0.0.1", "::1"]);
  const host = listenHost.toLowerCase();
  if (WILDCARD_HOSTS.has(host)) dns.add(hostname().toLowerCase());
  else if (isIP(host)) ip.add(host);
  else dns.add(host);
  return { dns: [...dns], ip: [...ip] };
}

/**
 * Why the serving certificate on disk cannot be kept (undefined when it can): it must parse, belong to the key, be
 * issued by the current CA, name every SAN, and stay valid for more than RENEW_WITHIN_SECONDS.
 */
export function servingProblem(certPem: string, keyPem: string, ca: CaKeyPair, names: ServingNames, now: Date): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!privateKeyMatchesCertificate(loadPrivateKey(keyPem), cert)) return "the key file does not belong to the certificate";
  } catch (err) {
    return `it cannot be read (${(err as Error).message})`;
  }
  const caCert = new X509Certificate(ca.certDer);
  if (!cert.checkIssued(caCert) || !cert.verify(caCert.publicKey)) return "it was not issued by the current cluster CA";
  const missing = [...names.dns.filter((d) => cert.checkHost(d) === undefined), ...names.ip.filter((i) => cert.checkIP(i) === undefined)];
  if (missing.length > 0) return `it does not name ${missing.join(", ")}`;
  return expiryProblem(new Date(cert.validTo), now);
}

/** "expires ..." when `notAfter` is within RENEW_WITHIN_SECONDS of `now`. */
export function expiryProblem(notAfter: Date, now: Date): string | undefined {
  if (notAfter.getTime() - now.getTime() > RENEW_WITHIN_SECONDS * 1000) return undefined;
  return notAfter <= now ? `it expired at ${notAfter.toISOString()}` : `it expires at ${notAfter.toISOString()}, within 30 days`;
}

/**
 * Narrows `path` to `mode` (0700 for a directory, 0600 for a file) when its group or others may use it at all: it is
 * or holds private keys. Warns naming the path and the mode it had. A missing path is left alone.
 */
export async function restrictToOwner(path: string, mode: number, logger: Logger): Promise<void> {
  let was: number;
  try {
    was = (await stat(path)).mode & 0o777;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw ioError(`cannot use ${path}`, err);
  }
  if ((was & 0o077) === 0) return;
  await chmod(path, mode).catch((err: unknown) => {
    throw ioError(`cannot restrict ${path} to its owner`, err);
  });
  const octal = (m: number) => `0${m.toString(8).padStart(3, "0")}`;
  logger.warn({ path, was: octal(was), mode: octal(mode) }, `${path} was mode ${octal(was)}, open to others; restricted it to ${octal(mode)}`);
}

/** Creates `dir` 0700, or narrows an existing one that others could read: it holds private keys. */
async function privateDir(dir: string, logger: Logger): Promise<void> {
  await ensureDir(dir);
  await restrictToOwner(dir, 0o700, logger);
}

/**
 * The files of a data directory that hold secrets (relative to it): the cluster CA key, the serving key, the
 * ServiceAccount signing key, admin.conf (the administrator's key) and the store (Secrets). Written 0600; narrowed
 * to 0600 at start, with a warning, when they were opened wider.
 */
export const PRIVATE_FILES: readonly string[] = [
  join(PKI_DIR, "ca.key"),
  join(PKI_DIR, "apiserver.key"),
  join(PKI_DIR, SA_KEY_FILE),
  "admin.conf",
  "store.db",
  "store.db-wal",
];

/**
 * Publishes a file under a name that must not exist yet, through link(): of several processes racing (replicas starting
 * at once on one data directory), exactly one wins; false for the others.
 */
async function publishNew(path: string, data: string, mode: number): Promise<boolean> {
  const temp = `${path}.${randomBytes(6).toString("hex")}.new`;
  try {
    await writeFile(temp, data, { mode, flag: "wx" });
    await link(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw ioError(`cannot write ${path}`, err);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** The CA files another process is publishing: its key is there, its certificate follows within moments. */
async function awaitPublished(paths: PairPaths): Promise<[string | undefined, string | undefined]> {
  for (let i = 0; i < 100; i++) {
    const pair = await Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
    if (pair[0] !== undefined && pair[1] !== undefined) return pair;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
}

async function clusterCa(paths: PairPaths, now: Date, logger: Logger): Promise<{ ca: CaKeyPair; action: "created" | "kept" }> {
  let [certPem, keyPem] = await Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
  if (certPem === undefined && keyPem === undefined) {
    const made = await generateCa({ commonName: CA_COMMON_NAME, keyType: "p256", lifetimeSeconds: CA_LIFETIME_SECONDS, now });
    // The key decides: whoever publishes it publishes the certificate too; the others use that pair. With
    // --ca-key-kms the key reaches the disk only wrapped.
    const wrapper = keyWrapper();
    if (await publishNew(paths.key, wrapper ? await wrapKeyPem(made.keyPem, wrapper) : made.keyPem, 0o600)) {
      if (!(await publishNew(paths.cert, made.certPem, 0o644))) throw new PlatformError("CA_INVALID", `${paths.cert} appeared while the cluster CA was being created; move it away and start again`);
      logger.info({ cert: paths.cert, notAfter: made.ca.notAfter.toISOString() }, "created the cluster CA");
      return { ca: made.ca, action: "created" };
    }
    [certPem, keyPem] = await awaitPublished(paths);
  } else if (certPem === undefined && keyPem !== undefined) {
    [certPem, keyPem] = await awaitPublished(paths);
  }
  if (certPem === undefined || keyPem === undefined) {
    const [found, missing] = certPem === undefined ? [paths.key, paths.cert] : [paths.cert, paths.key];
    throw new PlatformError(
      "CA_INVALID",
      `found ${found} but not ${missing}: restore the missing file, or move both away to create a new cluster CA (certificates from the old one then stop working)`,
    );
  }
  const wrapper = keyWrapper();
  if (wrapper && !isWrappedKey(keyPem)) {
    logger.warn({ key: paths.key, kms: wrapper.name }, "the cluster CA key is not wrapped by the KMS: run `platform-ca storage rewrite --ca-key-kms` to wrap it");
  }
  // Unwrapped first, outside the repair advice below: a KMS that does not answer is not a broken file.
  const pem = await unwrapKeyText(keyPem, paths.key);
  let ca: CaKeyPair;
  try {
    ca = caFromPem(certPem, pem, { certName: paths.cert, keyName: paths.key });
  } catch (err) {
    const message = `${(err as Error).message}; the cluster CA is never replaced automatically: repair the files, or move both away to create a new one`;
    throw new PlatformError("CA_INVALID", message, { cause: err });
  }
  if (ca.notAfter <= now) {
    throw new PlatformError("CA_EXPIRED", `the cluster CA ${paths.cert} expired at ${ca.notAfter.toISOString()}; see "CA rotation" in docs/operations.md`);
  }
  const soon = expiryProblem(ca.notAfter, now);
  if (soon) logger.warn({ cert: paths.cert, notAfter: ca.notAfter.toISOString() }, `the cluster CA needs rotating: ${soon}`);
  return { ca, action: "kept" };
}

/**
 * Creates what is missing in `<data-dir>/pki` (dir 0700, keys 0600) and reuses what is there: the cluster CA is
 * never replaced (a broken or half-present pair stops the start), the serving certificate is reissued, with a
 * warning naming why, when it no longer fits.
 */
export async function bootstrapPki(options: PkiOptions): Promise<DataDirPki> {
  if (typeof options?.dataDir !== "string" || options.dataDir === "") throw invalidOption("dataDir", "to be a directory path", options?.dataDir);
  if (typeof options.listenHost !== "string") throw invalidOption("listenHost", "to be a host name or address", options.listenHost);
  const logger = options.logger ?? silentLogger();
  const now = (options.now ?? (() => new Date()))();
  const dir = join(options.dataDir, PKI_DIR);
  await privateDir(options.dataDir, logger);
  await privateDir(dir, logger);
  for (const file of PRIVATE_FILES) await restrictToOwner(join(options.dataDir, file), 0o600, logger);

  const caPaths = pairPaths(dir, "ca");
  const { ca, action: caAction } = await clusterCa(caPaths, now, logger);

  const paths = pairPaths(dir, "apiserver");
  const names = servingNames(options.listenHost);
  const [certPem, keyPem] = await Promise.all([readOptional(paths.cert), readOptional(paths.key)]);
  const problem = certPem !== undefined && keyPem !== undefined ? servingProblem(certPem, keyPem, ca, names, now) : undefined;
  if (certPem !== undefined && keyPem !== undefined && problem === undefined) {
    return { dir, caFiles: { certFile: caPaths.cert, keyFile: caPaths.key }, ca, serving: { certFile: paths.cert, keyFile: paths.key, certPem, keyPem }, actions: { ca: caAction, serving: "kept" } };
  }
  const leaf = await mintLeaf({ commonName: SERVING_COMMON_NAME, ...names, keyType: "p256", usages: SERVING_USAGES, lifetimeSeconds: SERVING_LIFETIME_SECONDS, ca, now });
  await writePair(paths, leaf.certPem, leaf.keyPem);
  const reissued = certPem !== undefined || keyPem !== undefined;
  if (reissued) logger.warn({ cert: paths.cert, reason: problem ?? "its certificate or key file is missing" }, "replaced the API server serving certificate");
  else logger.info({ cert: paths.cert, dns: names.dns, ip: names.ip }, "created the API server serving certificate");
  return {
    dir,
    caFiles: { certFile: caPaths.cert, keyFile: caPaths.key },
    ca,
    serving: { certFile: paths.cert, keyFile: paths.key, certPem: leaf.certPem, keyPem: leaf.keyPem },
    actions: { ca: caAction, serving: reissued ? "reissued" : "created" },
  };
}

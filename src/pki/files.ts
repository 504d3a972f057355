// PKI files on disk: certificate/key pairs (key 0600, cert 0644), written without ever leaving a half-written file.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { PlatformError } from "../errors.js";
import { writePrivateKeyFile } from "./keys.js";

export const CERT_MODE = 0o644;
export const DIR_MODE = 0o700;

/** Writes `data` to `path` with `mode`; the rename makes the new content appear at once. */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode: number): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(tmp, data, { mode, flag: "wx" });
    // The umask may have narrowed or (for 0644) kept the mode; set it exactly.
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw ioError(`cannot write ${path}`, err);
  }
}

/** Creates `dir` (0700) when missing; an existing directory keeps its mode. */
export async function ensureDir(dir: string): Promise<void> {
  const existing = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw ioError(`cannot use ${dir}`, err);
  });
  if (existing?.isDirectory()) return;
  if (existing) throw new PlatformError("IO_ERROR", `${dir} exists and is not a directory`);
  try {
    await mkdir(dir, { recursive: true, mode: DIR_MODE });
    await chmod(dir, DIR_MODE);
  } catch (err) {
    throw ioError(`cannot create ${dir}`, err);
  }
}

/** IO_ERROR naming what failed and the system error code (ENOENT, EACCES...). */
export function ioError(what: string, err: unknown): PlatformError {
  return new PlatformError("IO_ERROR", `${what}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
}

/** The file's text, or undefined when it does not exist; any other failure is IO_ERROR. */
export async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw ioError(`cannot read ${path}`, err);
  }
}

export interface PairPaths {
  readonly cert: string;
  readonly key: string;
}

/** `<name>.crt` and `<name>.key` in `dir` (the kubeadm layout of dev-certs and of the data directory). */
export function pairPaths(dir: string, name: string): PairPaths {
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** Writes the key first (0600), then the certificate (0644): a crash in between leaves a pair the next run re-issues. */
export async function writePair(paths: PairPaths, certPem: string, keyPem: string): Promise<void> {
  await writePrivateKeyFile(paths.key, keyPem);
  await writeFileAtomic(paths.cert, certPem, CERT_MODE);
}

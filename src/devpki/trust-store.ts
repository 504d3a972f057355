// Adds the dev CA to, or removes it from, the system trust store (Debian's update-ca-certificates) and NSS databases (certutil).
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { readCertificateFacts } from "../pki/ca.js";
import { DerReader } from "../pki/der.js";
import { readName } from "../pki/names.js";
import { decodePem } from "../pki/pem.js";

const run = promisify(execFile);

export const TRUST_STORES = ["system", "nss"] as const;
export type TrustStoreKind = (typeof TRUST_STORES)[number];

export interface TrustStoreOptions {
  readonly caCertPem: string;
  /** The same certificate on disk, for certutil. */
  readonly caCertFile: string;
  readonly stores: readonly TrustStoreKind[];
  /** File-system root of the system store (default `/`): a directory laid out like one, for tests and images. */
  readonly systemRoot?: string;
  /** NSS databases to use; default: ~/.pki/nssdb and the Firefox profiles found under `home`. */
  readonly nssDbs?: readonly string[];
  readonly home: string;
}

export type TrustAction = "added" | "present" | "removed" | "absent" | "skipped" | "refused";

export interface TrustResult {
  readonly store: TrustStoreKind;
  readonly location: string;
  readonly result: TrustAction;
  readonly detail: string;
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code ?? "";
const denied = (err: unknown) => errno(err) === "EACCES" || errno(err) === "EPERM" || errno(err) === "EROFS";

const derOf = (pem: string) => decodePem(pem, { label: "CERTIFICATE" })[0]!.der;

function fingerprint(pem: string): string {
  return createHash("sha256").update(derOf(pem)).digest("hex").slice(0, 16);
}

/** The CA's common name: how browsers and certutil show it (the fingerprint is appended so two CAs of one name stay apart). */
export function caCommonName(pem: string): string {
  return readName(new DerReader(readCertificateFacts(derOf(pem)).subjectDer)).commonName ?? "platform-ca development CA";
}

/** update-ca-certificates' directories under `root` (its defaults when root is `/`). */
function debianLayout(root: string) {
  return {
    local: join(root, "usr/local/share/ca-certificates"),
    args: [
      ["--certsconf", "etc/ca-certificates.conf"],
      ["--certsdir", "usr/share/ca-certificates"],
      ["--localcertsdir", "usr/local/share/ca-certificates"],
      ["--etccertsdir", "etc/ssl/certs"],
      ["--hooksdir", "etc/ca-certificates/update.d"],
    ].flatMap(([flag, dir]) => [flag!, join(root, dir!)]),
  };
}

async function refresh(args: readonly string[], location: string): Promise<TrustResult | undefined> {
  try {
    await run("update-ca-certificates", [...args], { timeout: 120_000 });
    return undefined;
  } catch (err) {
    const e = err as { stderr?: string; code?: unknown };
    if (e.code === "ENOENT") return { store: "system", location, result: "skipped", detail: "update-ca-certificates is not installed (Debian/Ubuntu: apt-get install ca-certificates)" };
    return { store: "system", location, result: "refused", detail: `update-ca-certificates failed: ${(e.stderr ?? String(err)).trim().split("\n").pop()}` };
  }
}

// sudo changes HOME, and with it the per-user CA directory: the way out names the CA directory explicitly.
const needsRoot = (o: TrustStoreOptions, install: boolean, where: string, code: string) =>
  `cannot ${install ? "write" : "remove"} ${where} (${code}): the system store needs root: sudo platform-ca dev-certs ${install ? "install" : "uninstall"} --store system --ca-dir ${dirname(o.caCertFile)}`;

async function systemStore(o: TrustStoreOptions, install: boolean): Promise<TrustResult> {
  const root = o.systemRoot ?? "/";
  const { local, args } = debianLayout(root);
  const file = join(local, `platform-ca-dev-${fingerprint(o.caCertPem)}.crt`);
  if (!existsSync(join(root, "etc/ssl/certs"))) {
    return { store: "system", location: local, result: "skipped", detail: `no Debian-style trust store here (${join(root, "etc/ssl/certs")} is missing)` };
  }
  const current = await readFile(file, "utf8").catch(() => undefined);
  if (install && current === o.caCertPem) return { store: "system", location: file, result: "present", detail: "already trusted" };
  if (!install && current === undefined) return { store: "system", location: file, result: "absent", detail: "was not installed" };
  try {
    if (install) {
      await mkdir(local, { recursive: true, mode: 0o755 });
      await writeFile(file, o.caCertPem, { mode: 0o644 });
    } else await rm(file);
  } catch (err) {
    if (denied(err)) return { store: "system", location: file, result: "refused", detail: needsRoot(o, install, file, errno(err)) };
    throw err;
  }
  // --fresh on removal: without it the links to the removed file stay behind (dangling) in etc/ssl/certs.
  return (await refresh(install ? args : [...args, "--fresh"], file)) ?? { store: "system", location: file, result: install ? "added" : "removed", detail: "update-ca-certificates ran" };
}

/** NSS databases (sql: format, cert9.db) where browsers look: the shared one of Chrome, and Firefox profiles. */
export function findNssDbs(home: string): string[] {
  const found = [join(home, ".pki/nssdb")];
  for (const base of [join(home, ".mozilla/firefox"), join(home, "snap/firefox/common/.mozilla/firefox")]) {
    if (!existsSync(base)) continue;
    for (const entry of readdirSync(base, { withFileTypes: true })) if (entry.isDirectory()) found.push(join(base, entry.name));
  }
  return found.filter((dir) => existsSync(join(dir, "cert9.db")));
}

async function certutil(args: readonly string[]): Promise<{ ok: boolean; message: string }> {
  try {
    await run("certutil", [...args], { timeout: 60_000 });
    return { ok: true, message: "" };
  } catch (err) {
    const e = err as { code?: unknown; stderr?: string };
    if (e.code === "ENOENT") throw err;
    return { ok: false, message: (e.stderr ?? String(err)).trim().split("\n").pop() ?? "" };
  }
}

async function nssStores(o: TrustStoreOptions, install: boolean): Promise<TrustResult[]> {
  const dbs = o.nssDbs ?? findNssDbs(o.home);
  if (dbs.length === 0) return [{ store: "nss", location: join(o.home, ".pki/nssdb"), result: "skipped", detail: "no NSS database found (~/.pki/nssdb, Firefox profiles)" }];
  const nick = `${caCommonName(o.caCertPem)} ${fingerprint(o.caCertPem)}`;
  const results: TrustResult[] = [];
  for (const dir of dbs) {
    const db = `sql:${dir}`;
    try {
      const present = (await certutil(["-L", "-d", db, "-n", nick])).ok;
      if (install === present) {
        results.push({ store: "nss", location: dir, result: install ? "present" : "absent", detail: install ? `already trusted as "${nick}"` : "was not installed" });
        continue;
      }
      const done = install
        ? await certutil(["-A", "-d", db, "-t", "C,,", "-n", nick, "-a", "-i", o.caCertFile])
        : await certutil(["-D", "-d", db, "-n", nick]);
      results.push(done.ok
        ? { store: "nss", location: dir, result: install ? "added" : "removed", detail: `"${nick}"` }
        : { store: "nss", location: dir, result: "refused", detail: `certutil: ${done.message}` });
    } catch {
      return [{ store: "nss", location: dir, result: "skipped", detail: "certutil is not installed (Debian/Ubuntu: apt-get install libnss3-tools)" }];
    }
  }
  return results;
}

/** Adds (install) or removes the CA in each chosen store; a store it may not change is `refused` with the way out. */
export async function changeTrust(o: TrustStoreOptions, install: boolean): Promise<TrustResult[]> {
  const results: TrustResult[] = [];
  if (o.stores.includes("system")) results.push(await systemStore(o, install));
  if (o.stores.includes("nss")) results.push(...(await nssStores(o, install)));
  return results;
}

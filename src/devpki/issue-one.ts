// `dev-certs issue`: one certificate for command-line names with the dev CA (created when missing), mkcert style.
import { dirname, join } from "node:path";
import { DEFAULT_USAGES } from "../config/pki-manifest.js";
import { generateCa } from "../pki/ca.js";
import type { KeyType } from "../pki/keys.js";
import { DerReader } from "../pki/der.js";
import { readName } from "../pki/names.js";
import { decodePem } from "../pki/pem.js";
import type { CaKeyPair } from "../pki/types.js";
import { PROJECT_CA_COMMON_NAME } from "./ca-root.js";
import { ensureDir, pairPaths, writeFileAtomic, writePair, type PairPaths } from "../pki/files.js";
import { issueLeaf } from "./leaf.js";
import { findPair, loadFoundCa } from "./material.js";
import { classifyNames, issueFileBase } from "./names.js";
import { buildPkcs12 } from "./pkcs12.js";

/** The dev CA `issue` shares with the default manifest (its first CA is named `ca`). */
export const DEV_CA = { name: "ca", commonName: PROJECT_CA_COMMON_NAME, keyType: "p256", lifetimeSeconds: 3650 * 86_400 } as const;
/** mkcert's leaf lifetime: 825 days, the longest macOS accepts for TLS server certificates. */
export const ISSUE_LIFETIME_SECONDS = 825 * 86_400;
// RFC 5280 ub-common-name: a longer first name stays a SAN only.
const MAX_COMMON_NAME = 64;

export interface IssueOneOptions {
  /** DNS names, IPs, emails (`@`) and URIs (`scheme://`); the first is the common name. */
  readonly names: readonly string[];
  /** Client auth instead of server auth. */
  readonly client?: boolean;
  readonly keyType?: KeyType;
  /** Where `<name>.pem` and `<name>-key.pem` (or `<name>.p12`) go unless the file options name them. */
  readonly outDir: string;
  /** Directory of the dev CA (`ca.crt`, `ca.key`). */
  readonly caDir: string;
  /** Common name of the CA when it has to be made (default the project CA's). */
  readonly caCommonName?: string;
  readonly certFile?: string;
  readonly keyFile?: string;
  /** Write a PKCS#12 file (key, certificate, CA) instead of the PEM files; `true` names it `<name>.p12`. */
  readonly pkcs12?: string | true;
  readonly pkcs12Password?: string;
  readonly now?: () => Date;
}

/** One line of `issue`'s table: what was written, and the names the certificate is for (the CA's: its common name). */
export interface IssueRow {
  readonly name: string;
  readonly kind: "ca" | "server" | "client";
  readonly action: "issued" | "kept";
  readonly notAfter: Date;
  readonly files: readonly string[];
  readonly names: string;
}

export interface DevCa {
  readonly ca: CaKeyPair;
  readonly paths: PairPaths;
  readonly created: boolean;
}

/** The dev CA in `caDir`, made (P-256, ten years) when both files are missing; broken files stop with CA_INVALID. */
export async function ensureDevCa(caDir: string, commonName: string = DEV_CA.commonName, now = new Date()): Promise<DevCa> {
  await ensureDir(caDir);
  const paths = pairPaths(caDir, DEV_CA.name);
  const found = await findPair(paths, true);
  if (found) return { ca: loadFoundCa(found, paths), paths, created: false };
  const made = await generateCa({ ...DEV_CA, commonName, now });
  await writePair(paths, made.certPem, made.keyPem);
  return { ca: made.ca, paths, created: true };
}

/** Returns two rows: the CA (kept or issued) and the new certificate. */
export async function issueDevCertificate(options: IssueOneOptions): Promise<IssueRow[]> {
  const names = classifyNames(options.names);
  const now = (options.now ?? (() => new Date()))();
  const client = options.client === true;
  const { ca, paths: caPaths, created } = await ensureDevCa(options.caDir, options.caCommonName, now);

  const first = options.names[0]!.trim();
  const leaf = await issueLeaf({
    ...names,
    ...(first.length <= MAX_COMMON_NAME && { commonName: first }),
    keyType: options.keyType ?? "p256",
    usages: DEFAULT_USAGES[client ? "client" : "server"],
    lifetimeSeconds: ISSUE_LIFETIME_SECONDS,
    ca,
    now,
  });
  const base = issueFileBase(options.names, client);
  let files: string[];
  if (options.pkcs12 !== undefined) {
    const file = options.pkcs12 === true ? join(options.outDir, `${base}.p12`) : options.pkcs12;
    const certificates = decodePem(`${leaf.certPem}${ca.certPem}`, { label: "CERTIFICATE" }).map((b) => b.der);
    const der = buildPkcs12({ keyPem: leaf.keyPem, certificates, friendlyName: base, ...(options.pkcs12Password !== undefined && { password: options.pkcs12Password }) });
    await ensureDir(dirname(file));
    // It holds the private key: 0600 like any key file.
    await writeFileAtomic(file, der, 0o600);
    files = [file];
  } else {
    const pair = { cert: options.certFile ?? join(options.outDir, `${base}.pem`), key: options.keyFile ?? join(options.outDir, `${base}-key.pem`) };
    await Promise.all([...new Set([dirname(pair.cert), dirname(pair.key)])].map(ensureDir));
    await writePair(pair, leaf.certPem, leaf.keyPem);
    files = [pair.cert, pair.key];
  }
  return [
    { name: DEV_CA.name, kind: "ca", action: created ? "issued" : "kept", notAfter: ca.notAfter, files: [caPaths.cert, caPaths.key], names: `CN=${commonNameOf(ca)}` },
    { name: base, kind: client ? "client" : "server", action: "issued", notAfter: leaf.notAfter, files, names: options.names.map((n) => n.trim()).join(" ") },
  ];
}

function commonNameOf(ca: CaKeyPair): string {
  return readName(new DerReader(ca.subjectDer)).commonName ?? "";
}

// `dev-certs issue`: one certificate for command-line names with the dev CA (created when missing), mkcert style.
import { join } from "node:path";
import { DEFAULT_USAGES } from "../config/pki-manifest.js";
import { generateCa } from "../pki/ca.js";
import type { KeyType } from "../pki/keys.js";
import type { CaKeyPair } from "../pki/types.js";
import type { DevPkiRow } from "./dev-pki.js";
import { ensureDir, pairPaths, writePair } from "../pki/files.js";
import { issueLeaf } from "./leaf.js";
import { findPair, loadFoundCa } from "./material.js";
import { classifyNames, issueFileBase } from "./names.js";

/** The dev CA `issue` shares with the default manifest (its first CA is named `ca`). */
export const DEV_CA = { name: "ca", commonName: "platform-ca development cluster CA", keyType: "p256", lifetimeSeconds: 3650 * 86_400 } as const;
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
  readonly outDir: string;
  /** Directory of the dev CA (`ca.crt`, `ca.key`). */
  readonly caDir: string;
  readonly now?: () => Date;
}

/** Returns two rows: the CA (kept or issued) and the new certificate. */
export async function issueDevCertificate(options: IssueOneOptions): Promise<DevPkiRow[]> {
  const names = classifyNames(options.names);
  const now = (options.now ?? (() => new Date()))();
  const client = options.client === true;
  await ensureDir(options.caDir);
  await ensureDir(options.outDir);

  const caPaths = pairPaths(options.caDir, DEV_CA.name);
  const found = await findPair(caPaths, true);
  let ca: CaKeyPair;
  if (found) {
    ca = loadFoundCa(found, caPaths);
  } else {
    const made = await generateCa({ ...DEV_CA, now });
    await writePair(caPaths, made.certPem, made.keyPem);
    ca = made.ca;
  }

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
  const files = { cert: join(options.outDir, `${base}.pem`), key: join(options.outDir, `${base}-key.pem`) };
  await writePair(files, leaf.certPem, leaf.keyPem);
  return [
    { name: DEV_CA.name, kind: "ca", action: found ? "kept" : "issued", reason: found ? "existing dev CA" : "new", notAfter: ca.notAfter, files: Object.values(caPaths) },
    { name: base, kind: client ? "client" : "server", action: "issued", reason: options.names.join(" "), notAfter: leaf.notAfter, files: Object.values(files) },
  ];
}

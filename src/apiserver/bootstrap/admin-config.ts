// admin.conf: a kubeconfig for the cluster administrator (client certificate in system:masters) next to the data.
import { X509Certificate } from "node:crypto";
import { fromBase64, toBase64 } from "../../api/base64-text.js";
import { stringify as toYaml } from "yaml";
import { parsePlainYaml } from "../../plain-data.js";
import { invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { readOptional, writeFileAtomic } from "../../pki/files.js";
import { mintLeaf } from "../../pki/leaf.js";
import { loadPrivateKey, privateKeyMatchesCertificate } from "../../pki/keys.js";
import type { CaKeyPair } from "../../pki/types.js";
import { expiryProblem } from "./pki.js";

export const ADMIN_CONFIG_FILE = "admin.conf";
export const ADMIN_USER = "platform-ca:admin";
export const ADMIN_GROUP = "system:masters";
/** The cluster, user and context names inside admin.conf. */
export const ADMIN_CONFIG_NAMES = { cluster: "platform-ca", user: "admin", context: "platform-ca" } as const;
export const ADMIN_CERT_LIFETIME_SECONDS = 365 * 86_400;
const ADMIN_USAGES = ["digital signature", "key encipherment", "client auth"];

export interface AdminConfigOptions {
  /** Where to write it, normally `<data-dir>/admin.conf`. */
  readonly path: string;
  /** `https://host:port` of the running server (the real port when it listened on port 0). */
  readonly server: string;
  readonly ca: CaKeyPair;
  readonly now?: () => Date;
  readonly logger?: Logger;
}

export interface AdminConfigResult {
  readonly path: string;
  readonly action: "created" | "kept" | "rewritten";
  /** Why it was rewritten. */
  readonly reason?: string;
  /** NotAfter of the administrator's certificate. */
  readonly notAfter: Date;
}

interface AdminMaterial {
  readonly server: string;
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

/** A field's text, "" when it has none (a broken admin.conf is then rewritten, not read). */
const unb64 = (value: unknown) => fromBase64(value) ?? "";

/** The kubeconfig text: cluster `platform-ca`, user `admin`, context `platform-ca` (current). */
export function adminConfigText(m: AdminMaterial): string {
  const { cluster, user, context } = ADMIN_CONFIG_NAMES;
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: cluster, cluster: { server: m.server, "certificate-authority-data": toBase64(m.caPem) } }],
    users: [{ name: user, user: { "client-certificate-data": toBase64(m.certPem), "client-key-data": toBase64(m.keyPem) } }],
    contexts: [{ name: context, context: { cluster, user } }],
    "current-context": context,
    preferences: {},
  });
}

/** What an existing admin.conf holds; undefined when it is not one this module wrote. */
export function readAdminConfig(text: string): AdminMaterial | undefined {
  let doc: any;
  try {
    doc = parsePlainYaml(text);
  } catch {
    return undefined;
  }
  const cluster = Array.isArray(doc?.clusters) ? doc.clusters.find((c: any) => c?.name === ADMIN_CONFIG_NAMES.cluster)?.cluster : undefined;
  const user = Array.isArray(doc?.users) ? doc.users.find((u: any) => u?.name === ADMIN_CONFIG_NAMES.user)?.user : undefined;
  if (typeof cluster?.server !== "string" || !user) return undefined;
  return { server: cluster.server, caPem: unb64(cluster["certificate-authority-data"]), certPem: unb64(user["client-certificate-data"]), keyPem: unb64(user["client-key-data"]) };
}

/** Why the administrator certificate in `m` cannot be kept, or undefined. */
function certificateProblem(m: AdminMaterial, ca: CaKeyPair, now: Date): string | undefined {
  try {
    const cert = new X509Certificate(m.certPem);
    const caCert = new X509Certificate(ca.certDer);
    if (!cert.checkIssued(caCert) || !cert.verify(caCert.publicKey)) return "its certificate was not issued by the current cluster CA";
    if (!privateKeyMatchesCertificate(loadPrivateKey(m.keyPem), cert)) return "its key does not belong to its certificate";
    const expiring = expiryProblem(new Date(cert.validTo), now);
    return expiring ? `its certificate ${expiring.replace(/^it /, "")}` : undefined;
  } catch (err) {
    return `its certificate cannot be read (${(err as Error).message})`;
  }
}

/**
 * Writes `<data-dir>/admin.conf` (0600) when it is missing, names another server or CA, or its certificate nears
 * expiry; keeps it otherwise. The certificate (CN platform-ca:admin, O system:masters) is minted here, directly with
 * the CA: the CSR path rightly refuses system:masters for apiserver-client (admission and the signer both do), since
 * a CSR anyone may create must never yield an identity that bypasses authorization. Only whoever holds the CA key —
 * this process at bootstrap — may make one.
 */
export async function ensureAdminConfig(options: AdminConfigOptions): Promise<AdminConfigResult> {
  if (typeof options?.path !== "string" || options.path === "") throw invalidOption("path", "to be a file path", options?.path);
  if (!/^https:\/\/\S+$/.test(options.server ?? "")) throw invalidOption("server", "to be an https:// address", options.server);
  const logger = options.logger ?? silentLogger();
  const now = (options.now ?? (() => new Date()))();
  const { path, server, ca } = options;
  const existingText = await readOptional(path);
  const existing = existingText === undefined ? undefined : readAdminConfig(existingText);
  const problem = existing ? certificateProblem(existing, ca, now) : undefined;
  const reason = existingText === undefined
    ? undefined
    : !existing
      ? "it is not an admin.conf written by platform-ca"
      : (problem ?? (existing.server !== server ? `the server moved from ${existing.server} to ${server}` : existing.caPem.trim() !== ca.certPem.trim() ? "the cluster CA changed" : undefined));
  if (existing && reason === undefined) return { path, action: "kept", notAfter: new Date(new X509Certificate(existing.certPem).validTo) };

  let material: AdminMaterial;
  if (existing && problem === undefined) {
    material = { ...existing, server, caPem: ca.certPem };
  } else {
    const leaf = await mintLeaf({ commonName: ADMIN_USER, organizations: [ADMIN_GROUP], keyType: "p256", usages: ADMIN_USAGES, lifetimeSeconds: ADMIN_CERT_LIFETIME_SECONDS, ca, now });
    material = { server, caPem: ca.certPem, certPem: leaf.certPem, keyPem: leaf.keyPem };
  }
  await writeFileAtomic(path, adminConfigText(material), 0o600);
  const notAfter = new Date(new X509Certificate(material.certPem).validTo);
  if (reason === undefined) logger.info({ path, notAfter: notAfter.toISOString() }, "wrote admin.conf");
  else logger.warn({ path, reason }, "rewrote admin.conf");
  return { path, action: existingText === undefined ? "created" : "rewritten", ...(reason !== undefined && { reason }), notAfter };
}

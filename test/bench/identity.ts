// What the API server benchmarks send as a real client would: distinct CSRs (so the server's verified-CSR memo never
// hits) made before the clock starts, and a non-privileged node identity (client certificate) that RBAC must allow.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadCaFiles } from "../../src/pki/ca.js";
import { buildCsr } from "../../src/pki/csr-builder.js";
import { generateKeyPair } from "../../src/pki/keys.js";
import { mintLeaf } from "../../src/pki/leaf.js";
import { encodePem } from "../../src/pki/pem.js";

export interface ClientTls {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/**
 * `count` PEM CSRs, each for its own node name `system:node:<prefix>-<i>` in `system:nodes`: one P-256 key signs all
 * of them (a signature is ~40 µs; a key per CSR would cost more than the benchmark), yet every request's bytes differ.
 */
export async function distinctCsrPems(count: number, prefix: string): Promise<string[]> {
  const keys = await generateKeyPair("p256");
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    out.push(encodePem("CERTIFICATE REQUEST", buildCsr({ commonName: `system:node:${prefix}-${i}`, organizations: ["system:nodes"] }, keys)));
  }
  return out;
}

/**
 * A client certificate of the cluster CA in `<dataDir>/pki` for user `commonName` in `organizations`: without
 * system:masters, every request is decided by the RBAC rules (e.g. `system:node:x` in `system:nodes`, or the
 * controllers' user).
 */
export async function clusterClientTls(dataDir: string, commonName: string, organizations: readonly string[] = []): Promise<ClientTls> {
  const pki = join(dataDir, "pki");
  const ca = await loadCaFiles({ certFile: join(pki, "ca.crt"), keyFile: join(pki, "ca.key") });
  const leaf = await mintLeaf({
    keyType: "p256",
    commonName,
    organizations,
    usages: ["digital signature", "client auth"],
    lifetimeSeconds: 24 * 3600,
    ca,
    now: new Date(),
  });
  return { ca: readFileSync(join(pki, "ca.crt"), "utf8"), cert: leaf.certPem, key: leaf.keyPem };
}

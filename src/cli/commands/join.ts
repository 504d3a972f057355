// `platform-ca join`: kubeadm join's token discovery for a node agent. With only the server's address, a bootstrap
// token and the CA's public key hash, it reads cluster-info, trusts it only when the token's signature and the pin
// hold, and writes a bootstrap client config (that server and CA, the token) for `platform-ca credential`.
import { createHash, timingSafeEqual, X509Certificate } from "node:crypto";
import type { Command } from "commander";
import { stringify as toYaml } from "yaml";
import { CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_SIGNATURE_PREFIX, clusterInfoCluster, detachedSignature } from "../../api/cluster-info.js";
import { DEFAULT_GROUP_SUFFIX, type GroupNames } from "../../api/group.js";
import { CORE_VERSION, type ConfigMap } from "../../api/types/core.js";
import { toBase64 } from "../../api/base64-text.js";
import { BOOTSTRAP_TOKEN } from "../../apiserver/auth/authn-bootstrap-token.js";
import { createClient, defaultUserAgent, normalizeServer, type RestConfig } from "../../client/index.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { writeFileAtomic } from "../../pki/files.js";
import { decodePem } from "../../pki/pem.js";
import { groupNamesFlag, UsageError, type CommandModule } from "../program.js";

interface JoinFlags {
  readonly token?: string;
  readonly discoveryTokenCaCertHash?: string[];
  readonly discoveryTokenUnsafeSkipCaVerification?: boolean;
  readonly output?: string;
  readonly groupSuffix?: string;
}

/** kubeadm's pin of a CA certificate (PEM or DER): `sha256:` and the hex SHA-256 of its SubjectPublicKeyInfo. */
export function caCertHash(cert: string | Uint8Array): string {
  const spki = new X509Certificate(typeof cert === "string" ? cert : Buffer.from(cert)).publicKey.export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(spki).digest("hex")}`;
}

const PIN = /^sha256:[0-9a-f]{64}$/;

/** The pins of every certificate in a PEM bundle. */
export const caCertHashes = (bundle: string): string[] => decodePem(bundle).filter((b) => b.label === "CERTIFICATE").map((b) => caCertHash(b.der));

/**
 * What cluster-info says, once trusted: its signature for the token must match (compared in constant time), and
 * one of its CA certificates must have one of the pins (unless pins are skipped). Throws why it is not to be trusted.
 */
export function trustedClusterInfo(cm: ConfigMap, token: string, pins: readonly string[]): { server: string; caPem: string; content: string } {
  const [id, secret] = token.split(".") as [string, string];
  const content = cm.data?.[CLUSTER_INFO_KUBECONFIG_KEY];
  if (content === undefined) throw new PlatformError("UNAUTHORIZED", `cluster-info has no ${CLUSTER_INFO_KUBECONFIG_KEY} key`);
  const signature = cm.data?.[`${CLUSTER_INFO_SIGNATURE_PREFIX}${id}`];
  if (signature === undefined) throw new PlatformError("UNAUTHORIZED", `cluster-info is not signed for token id "${id}" (is the token meant for signing, and not expired?)`);
  const want = Buffer.from(detachedSignature(content, id, secret));
  const got = Buffer.from(signature);
  if (want.length !== got.length || !timingSafeEqual(want, got)) throw new PlatformError("UNAUTHORIZED", `cluster-info's signature for token id "${id}" does not match the token: refusing it`);
  const cluster = clusterInfoCluster(content);
  if (!cluster) throw new PlatformError("UNAUTHORIZED", "cluster-info's kubeconfig names no server or CA");
  const { server, caPem } = cluster;
  if (pins.length > 0) {
    const hashes = caCertHashes(caPem);
    if (!hashes.some((h) => pins.includes(h))) throw new PlatformError("UNAUTHORIZED", `cluster-info's CA (${hashes.join(", ")}) matches none of the --discovery-token-ca-cert-hash pins`);
  }
  return { server, caPem, content };
}

/** A client config without credentials, as a node that holds only a token has for its discovery. */
export function discoveryConfig(server: string, tls: RestConfig["tls"], timeoutMs: number): RestConfig {
  return { server, tls, credentials: { type: "none" }, namespace: "default", timeoutMs, qps: 0, burst: 0, userAgent: defaultUserAgent("platform-ca-join") };
}

/** cluster-info as `rest` reads it; a refusal says what to change on the server. */
export async function readClusterInfo(names: GroupNames, rest: RestConfig): Promise<ConfigMap> {
  const client = createClient(rest, { groupSuffix: names.suffix });
  const namespace = names.bootstrapTokens.publicNamespace;
  try {
    return await client.resource<ConfigMap>({ group: "", version: CORE_VERSION, plural: "configmaps", namespaced: true }).get(CLUSTER_INFO_NAME, { namespace });
  } catch (err) {
    // The two refusals a first join meets, with what to do about them.
    const path = `/api/v1/namespaces/${namespace}/configmaps/${CLUSTER_INFO_NAME}`;
    if (isPlatformError(err, "UNAUTHORIZED")) throw new PlatformError("UNAUTHORIZED", `${rest.server} does not let requests without credentials read ${path}: allow anonymous requests on that path (an AuthenticationConfiguration's anonymous.conditions; docs/operations.md "Discovery")`, { cause: err });
    if (isPlatformError(err, "NOT_FOUND")) throw new PlatformError("NOT_FOUND", `${rest.server} publishes no ${namespace}/${CLUSTER_INFO_NAME} (platform-ca up --enable-bootstrap-token-auth does${names.suffix === DEFAULT_GROUP_SUFFIX ? "" : `; is --group-suffix ${names.suffix} the server's?`})`, { cause: err });
    throw err;
  } finally {
    client.close();
  }
}

/** The bootstrap client config: the discovered cluster, the token as its user. */
export function bootstrapConfigText(server: string, caPem: string, token: string): string {
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "bootstrap", cluster: { server, "certificate-authority-data": toBase64(caPem) } }],
    users: [{ name: "bootstrap", user: { token } }],
    contexts: [{ name: "bootstrap", context: { cluster: "bootstrap", user: "bootstrap" } }],
    "current-context": "bootstrap",
  });
}

async function join(address: string, flags: JoinFlags): Promise<void> {
  const names = groupNamesFlag(flags.groupSuffix);
  const token = flags.token ?? "";
  if (!BOOTSTRAP_TOKEN.test(token)) throw new UsageError("--token: expected a bootstrap token, 6 and 16 characters of [a-z0-9] joined by a dot");
  const pins = (flags.discoveryTokenCaCertHash ?? []).map((p) => p.toLowerCase());
  const badPin = pins.find((p) => !PIN.test(p));
  if (badPin !== undefined) throw new UsageError(`--discovery-token-ca-cert-hash ${JSON.stringify(badPin)}: expected sha256: and 64 hex digits (platform-ca token create --print-join-command prints it)`);
  if (pins.length === 0 && !flags.discoveryTokenUnsafeSkipCaVerification) {
    throw new UsageError("give --discovery-token-ca-cert-hash (the CA's pin), or --discovery-token-unsafe-skip-ca-verification to trust the token's signature alone");
  }
  if (!flags.output) throw new UsageError("--output: the file to write the bootstrap client config to");
  let server: string;
  try {
    server = normalizeServer(address, "server");
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const timeoutMs = 30_000;
  // Nothing to check the server with yet: the content is trusted through the token's signature and the pin instead.
  const insecure = await readClusterInfo(names, discoveryConfig(server, { insecureSkipVerify: true }, timeoutMs));
  const found = trustedClusterInfo(insecure, token, pins);
  // As kubeadm: read it again over TLS checked against the discovered CA, so the server proves it holds the CA's
  // serving key, and the content must be the same.
  const again = await readClusterInfo(names, discoveryConfig(found.server, { ca: found.caPem }, timeoutMs));
  if (again.data?.[CLUSTER_INFO_KUBECONFIG_KEY] !== found.content) throw new PlatformError("UNAUTHORIZED", "cluster-info changed between the unchecked and the checked read: refusing it");
  await writeFileAtomic(flags.output, bootstrapConfigText(found.server, found.caPem, token), 0o600);
  process.stderr.write(`cluster-info trusted: server ${found.server}, CA ${caCertHashes(found.caPem).join(", ")}; wrote ${flags.output}\n`);
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export const joinCommand: CommandModule = (program: Command) => {
  program
    .command("join <server>")
    .description("discover a cluster as kubeadm join does (cluster-info, checked with a bootstrap token and the CA's pin) and write a bootstrap client config")
    .option("--token <token>", "bootstrap token (<id>.<secret>) whose signature cluster-info must carry")
    .option("--discovery-token-ca-cert-hash <sha256:hex>", "pin of the cluster CA's public key; repeatable", collect)
    .option("--discovery-token-unsafe-skip-ca-verification", "trust cluster-info on the token's signature alone")
    .option("-o, --output <file>", "where to write the bootstrap client config (0600)")
    .option("--group-suffix <suffix>", "API group suffix; k8s.io reads kube-public/cluster-info", DEFAULT_GROUP_SUFFIX)
    .addHelpText(
      "after",
      "\nThen get the node's client certificate with it:\n  platform-ca credential --platformconfig bootstrap.conf --cn system:node:NAME --o system:nodes --signer-name platform.io/apiserver-client-nodeagent\n\nExamples:\n  platform-ca join https://10.0.0.1:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:1e3f… -o bootstrap.conf\n",
    )
    .action((server: string, flags: JoinFlags) => join(server, flags));
};

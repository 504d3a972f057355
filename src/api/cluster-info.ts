// The cluster-info ConfigMap (upstream's kube-public/cluster-info): the kubeconfig a joining node reads without
// credentials, and the detached JWS signatures with which each bootstrap token vouches for it (RFC 7515 appendix F).
import { createHmac } from "node:crypto";
import { stringify as toYaml } from "yaml";
import { parsePlainYaml } from "../plain-data.js";
import { fromBase64, toBase64 } from "./base64-text.js";

export const CLUSTER_INFO_NAME = "cluster-info";
/** The key of the kubeconfig text the signatures are over. */
export const CLUSTER_INFO_KUBECONFIG_KEY = "kubeconfig";
/** A signature's key: this prefix and the token id. */
export const CLUSTER_INFO_SIGNATURE_PREFIX = "jws-kubeconfig-";
/** The Role and RoleBinding that let `system:anonymous` get it (kubeadm's are `kubeadm:bootstrap-signer-clusterinfo`). */
export const CLUSTER_INFO_READER = "platform-ca:bootstrap-signer-clusterinfo";

/**
 * The detached compact JWS (`header..signature`) of `content`, HS256 keyed by the token's secret, as upstream's
 * bootstrap signer computes it and `kubeadm join` recomputes it to compare: the protected header is exactly
 * `{"alg":"HS256","kid":"<id>"}` (go-jose's marshalling, keys sorted), and a secret shorter than 32 bytes is
 * zero-padded to 32 (go-jose's minimum HS256 key, which upstream pads to rather than refuses).
 */
export function detachedSignature(content: string, tokenId: string, tokenSecret: string): string {
  const secret = Buffer.from(tokenSecret, "utf8");
  const key = secret.length < 32 ? Buffer.concat([secret, Buffer.alloc(32 - secret.length)]) : secret;
  const header = Buffer.from(JSON.stringify({ alg: "HS256", kid: tokenId }), "utf8").toString("base64url");
  const payload = Buffer.from(content, "utf8").toString("base64url");
  return `${header}..${createHmac("sha256", key).update(`${header}.${payload}`).digest("base64url")}`;
}

/** The kubeconfig kubeadm publishes: one unnamed cluster (server and CA), no user or context. */
export function clusterInfoKubeconfig(server: string, caPem: string): string {
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "", cluster: { "certificate-authority-data": toBase64(caPem), server } }],
    contexts: null,
    "current-context": "",
    preferences: {},
    users: null,
  });
}

/** The server and CA bundle a cluster-info kubeconfig names (its first cluster), or undefined when it names none. */
export function clusterInfoCluster(kubeconfig: string): { server: string; caPem: string } | undefined {
  let doc: { clusters?: { cluster?: Record<string, unknown> }[] } | null;
  try {
    doc = parsePlainYaml(kubeconfig) as typeof doc;
  } catch {
    return undefined;
  }
  const cluster = Array.isArray(doc?.clusters) ? doc.clusters[0]?.cluster : undefined;
  const server = cluster?.server;
  const caData = cluster?.["certificate-authority-data"];
  if (typeof server !== "string" || typeof caData !== "string") return undefined;
  return { server, caPem: fromBase64(caData)! };
}

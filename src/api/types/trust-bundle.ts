// ClusterTrustBundle (certificates group, v1beta1): a cluster-scoped set of X.509 trust anchors, optionally tied to a signer.
import type { ApiObject, ApiList } from "../meta.js";

export const CLUSTER_TRUST_BUNDLE_KIND = "ClusterTrustBundle";
export const CLUSTER_TRUST_BUNDLE_VERSION = "v1beta1";

export interface ClusterTrustBundleSpec {
  /** Empty for a bundle that belongs to no signer; the object name then carries no `domain:path:` prefix. */
  signerName?: string;
  /** PEM text of CA certificates (plain text in JSON, not base64). */
  trustBundle: string;
}

export interface ClusterTrustBundle extends ApiObject {
  spec: ClusterTrustBundleSpec;
}

export type ClusterTrustBundleList = ApiList<ClusterTrustBundle>;

/** The name prefix a bundle of `signerName` must carry: `example.com/foo` → `example.com:foo:`. */
export function trustBundleNamePrefix(signerName: string): string {
  return `${signerName.replaceAll("/", ":")}:`;
}

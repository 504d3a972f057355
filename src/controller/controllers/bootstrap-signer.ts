// The bootstrap signer: signs the public cluster-info ConfigMap with every bootstrap token meant for signing, so a
// joining node holding a token can trust what it read without credentials (upstream's bootstrapsigner controller).
import { isDeepStrictEqual } from "node:util";
import { CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, CLUSTER_INFO_SIGNATURE_PREFIX, detachedSignature } from "../../api/cluster-info.js";
import type { ConfigMap, Secret } from "../../api/types/core.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError } from "../../errors.js";
import { bootstrapTokenSecretName, secretExpiry } from "../../apiserver/auth/authn-bootstrap-token.js";
import { fromBase64 } from "../../api/base64-text.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

/** kube-controller-manager's name for the same work (off by default there and here; `platform-ca up` runs it). */
export const BOOTSTRAP_SIGNER_CONTROLLER = "bootstrapsigner";

export interface BootstrapSignerOptions extends ControllerOptions {
  readonly configMaps: ResourceClient<ConfigMap>;
  /** The cluster-info ConfigMap (the informer selects its namespace and name). */
  readonly clusterInfo: Informer<ConfigMap>;
  /** Bootstrap token Secrets (the informer selects their namespace and type). */
  readonly tokens: Informer<Secret>;
  readonly secretType: string;
  /** Where bootstrap token Secrets are kept (`kube-system` under k8s.io): a Secret elsewhere never signs. */
  readonly tokenNamespace: string;
  /** Where cluster-info is read from (`kube-public` under k8s.io). */
  readonly publicNamespace: string;
}

/**
 * A token signs while its Secret (not being deleted) has the type, is named for the `token-id` it holds, has a
 * `token-secret`, `usage-bootstrap-signing: "true"` and no past or unreadable `expiration` — upstream's rule. Returns
 * the token and when it stops signing (Infinity when it never expires).
 */
function signingToken(secret: Secret, type: string, now: number): { id: string; secret: string; until: number } | undefined {
  if (secret.type !== type || secret.metadata.deletionTimestamp) return undefined;
  const id = fromBase64(secret.data?.["token-id"]);
  const tokenSecret = fromBase64(secret.data?.["token-secret"]);
  if (!id || !tokenSecret || secret.metadata.name !== bootstrapTokenSecretName(id)) return undefined;
  if (fromBase64(secret.data?.["usage-bootstrap-signing"]) !== "true") return undefined;
  const expiration = secretExpiry(secret.data);
  if (expiration !== undefined && !(expiration > now)) return undefined;
  return { id, secret: tokenSecret, until: expiration ?? Infinity };
}

/**
 * One key, the ConfigMap's: any change to it or to a token signs again. Signatures are kept in the ConfigMap's data as
 * `jws-kubeconfig-<id>`; those of tokens gone, expired or no longer for signing are removed, and the ConfigMap is
 * written only when a signature changed. A token that expires is looked at again at that moment, so its signature
 * goes even when nothing deletes its Secret.
 */
export class BootstrapSigner extends Controller {
  private readonly o: BootstrapSignerOptions;
  private readonly key: string;

  constructor(options: BootstrapSignerOptions) {
    super(BOOTSTRAP_SIGNER_CONTROLLER, [options.clusterInfo, options.tokens], options);
    this.o = options;
    this.key = `${options.publicNamespace}/${CLUSTER_INFO_NAME}`;
  }

  protected subscribe(): (() => void)[] {
    const poke = () => this.queue.add(this.key);
    return [
      this.o.clusterInfo.addHandlers({ onAdd: poke, onUpdate: poke }),
      this.o.tokens.addHandlers({ onAdd: poke, onUpdate: poke, onDelete: poke }),
    ];
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const current = this.o.clusterInfo.get(key);
    if (!current || current.metadata.deletionTimestamp) return;
    const content = current.data?.[CLUSTER_INFO_KUBECONFIG_KEY];
    if (content === undefined) {
      this.log.debug({ configMap: key }, `no ${CLUSTER_INFO_KUBECONFIG_KEY} key to sign`);
      return;
    }
    const now = this.clock.now();
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(current.data ?? {})) if (!k.startsWith(CLUSTER_INFO_SIGNATURE_PREFIX)) data[k] = v;
    let next = Infinity;
    for (const secret of this.o.tokens.list()) {
      if (secret.metadata.namespace !== this.o.tokenNamespace) continue;
      const token = signingToken(secret, this.o.secretType, now);
      if (!token) continue;
      data[CLUSTER_INFO_SIGNATURE_PREFIX + token.id] = detachedSignature(content, token.id, token.secret);
      next = Math.min(next, token.until);
    }
    if (next !== Infinity) this.queue.addAfter(key, next - now);
    if (isDeepStrictEqual(data, current.data ?? {})) return;
    try {
      // The informer's object is shared: the update goes from a copy, with its resourceVersion.
      await this.o.configMaps.update({ ...current, data }, { signal });
    } catch (err) {
      // Changed or deleted meanwhile: the informer brings the change, which signs again.
      if (isPlatformError(err, "CONFLICT") || isPlatformError(err, "NOT_FOUND")) return;
      throw err;
    }
    const signed = Object.keys(data).filter((k) => k.startsWith(CLUSTER_INFO_SIGNATURE_PREFIX)).length;
    this.log.info({ configMap: key, signatures: signed }, "cluster-info signed");
  }
}

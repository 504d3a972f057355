// The token cleaner: deletes bootstrap token Secrets once their `expiration` has passed, as upstream's tokencleaner
// controller (off by default there and here; `platform-ca up` runs it, as kubeadm's clusters do).
import type { Secret } from "../../api/types/core.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError } from "../../errors.js";
import { secretExpiry } from "../../apiserver/auth/authn-bootstrap-token.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

/** kube-controller-manager's name for the same work. */
export const TOKEN_CLEANER_CONTROLLER = "tokencleaner";

export interface TokenCleanerOptions extends ControllerOptions {
  readonly secrets: ResourceClient<Secret>;
  /** Bootstrap token Secrets (the informer selects their namespace and type). */
  readonly tokens: Informer<Secret>;
  readonly secretType: string;
}

/** Keys are `namespace/name`. A token not yet expired is looked at again when it expires. */
export class TokenCleaner extends Controller {
  private readonly o: TokenCleanerOptions;

  constructor(options: TokenCleanerOptions) {
    super(TOKEN_CLEANER_CONTROLLER, [options.tokens], options);
    this.o = options;
  }

  protected subscribe(): (() => void)[] {
    const key = (s: Secret) => this.queue.add(`${s.metadata.namespace}/${s.metadata.name}`);
    return [this.o.tokens.addHandlers({ onAdd: key, onUpdate: (_old, s) => key(s) })];
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const secret = this.o.tokens.get(key);
    if (!secret || secret.metadata.deletionTimestamp || secret.type !== this.o.secretType) return;
    // NaN (not a time) counts as expired, as upstream.
    const at = secretExpiry(secret.data);
    if (at === undefined) return;
    const left = at - this.clock.now();
    if (left > 0) {
      this.queue.addAfter(key, left);
      return;
    }
    try {
      // Only the Secret looked at: one made again under the name meanwhile is another token.
      await this.o.secrets.delete(secret.metadata.name!, { namespace: secret.metadata.namespace!, preconditions: { uid: secret.metadata.uid! }, signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND") || isPlatformError(err, "CONFLICT")) return;
      throw err;
    }
    this.log.info({ namespace: secret.metadata.namespace, secret: secret.metadata.name }, "expired bootstrap token deleted");
  }
}

// The ServiceAccount token controller: fills token Secrets (type `<domain>/service-account-token`) with a long-lived
// token, the root CA and the namespace, and deletes those whose ServiceAccount is gone, as upstream's tokens controller.
import type { ApiObject } from "../../api/meta.js";
import type { GroupNames } from "../../api/group.js";
import type { Secret } from "../../api/types/core.js";
import { toBase64 } from "../../api/base64-text.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError } from "../../errors.js";
import { signLegacyToken } from "../../apiserver/auth/legacy-tokens.js";
import type { SigningKey } from "../../apiserver/auth/sa-signing-key.js";
import type { Informer } from "../informer.js";
import { Controller, type ControllerOptions } from "../controller.js";

/** kube-controller-manager's name for the same work (its `--controllers` alias). */
export const TOKEN_CONTROLLER = "serviceaccount-token";
/** The data keys of a token Secret. */
export const TOKEN_KEY = "token";
export const TOKEN_CA_KEY = "ca.crt";
export const TOKEN_NAMESPACE_KEY = "namespace";

export interface TokenControllerOptions extends ControllerOptions {
  readonly secrets: ResourceClient<Secret>;
  readonly serviceAccounts: ResourceClient;
  /** The token Secrets (the informer selects their type). */
  readonly tokenSecrets: Informer<Secret>;
  /** Every ServiceAccount. */
  readonly accounts: Informer<ApiObject>;
  readonly names: GroupNames;
  /** SAController.ServiceAccountKeyFile's key: the API server checks the tokens with the same key. */
  readonly key: SigningKey;
  /** What `ca.crt` holds (SAController.RootCAFile, else the CA the client trusts for the server); none: not written. */
  readonly rootCa?: string;
}

/**
 * Keys are `namespace/name` of token Secrets. A Secret whose ServiceAccount does not exist (read from the server,
 * not only the cache: the account may have been created a moment before it), or exists with another uid than the
 * Secret's annotation records, is deleted; otherwise what it lacks is written: the uid annotation, the token (kept
 * when it has one), `ca.crt` and `namespace`.
 */
export class TokenController extends Controller {
  private readonly o: TokenControllerOptions;

  constructor(options: TokenControllerOptions) {
    super(TOKEN_CONTROLLER, [options.tokenSecrets, options.accounts], options);
    this.o = options;
  }

  protected subscribe(): (() => void)[] {
    const bySecret = (s: Secret) => this.queue.add(`${s.metadata.namespace}/${s.metadata.name}`);
    // An account deleted or replaced: the Secrets that name it are looked at again (and deleted).
    const byAccount = (sa: ApiObject) => {
      const annotation = this.o.names.secretTypes.serviceAccountNameAnnotation;
      for (const s of this.o.tokenSecrets.list()) if (s.metadata.namespace === sa.metadata.namespace && s.metadata.annotations?.[annotation] === sa.metadata.name) bySecret(s);
    };
    return [
      this.o.tokenSecrets.addHandlers({ onAdd: bySecret, onUpdate: (_old, s) => bySecret(s) }),
      this.o.accounts.addHandlers({ onAdd: byAccount, onDelete: byAccount }),
    ];
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const secret = this.o.tokenSecrets.get(key);
    if (!secret || secret.metadata.deletionTimestamp || secret.type !== this.o.names.secretTypes.serviceAccountToken) return;
    const { serviceAccountNameAnnotation: nameKey, serviceAccountUidAnnotation: uidKey } = this.o.names.secretTypes;
    const namespace = secret.metadata.namespace!;
    const saName = secret.metadata.annotations?.[nameKey];
    const wantedUid = secret.metadata.annotations?.[uidKey];
    const sa = saName ? await this.account(namespace, saName, wantedUid, signal) : undefined;
    if (!sa || sa.metadata.deletionTimestamp || (wantedUid && sa.metadata.uid !== wantedUid)) return this.remove(secret, saName, signal);
    const data = secret.data ?? {};
    const next: Record<string, string> = { ...data };
    if (!data[TOKEN_KEY]) {
      next[TOKEN_KEY] = toBase64(await signLegacyToken(this.o.key, this.o.names, { namespace, secretName: secret.metadata.name!, serviceAccountName: saName!, serviceAccountUid: sa.metadata.uid! }));
    }
    if (this.o.rootCa !== undefined) next[TOKEN_CA_KEY] = toBase64(this.o.rootCa);
    next[TOKEN_NAMESPACE_KEY] = toBase64(namespace);
    const sameData = Object.keys(next).every((k) => next[k] === data[k]);
    if (sameData && wantedUid === sa.metadata.uid) return;
    // The informer's object is shared: the update goes from a copy, with its resourceVersion (a conflict is retried).
    const annotations = { ...secret.metadata.annotations, [uidKey]: sa.metadata.uid! };
    try {
      await this.o.secrets.update({ ...secret, metadata: { ...secret.metadata, annotations }, data: next }, { signal });
    } catch (err) {
      // Deleted meanwhile: nothing left to fill.
      if (isPlatformError(err, "NOT_FOUND")) return;
      throw err;
    }
    this.log.info({ namespace, secret: secret.metadata.name, serviceAccount: saName }, data[TOKEN_KEY] ? "token secret updated" : "token secret filled");
  }

  /**
   * The account from the cache when it is there with the uid wanted (if any), else from the server: the cache may not
   * have seen it yet, or still hold the one it replaced. Upstream's controller reads the server in the same cases.
   */
  private async account(namespace: string, name: string, uid: string | undefined, signal: AbortSignal): Promise<ApiObject | undefined> {
    const cached = this.o.accounts.get(`${namespace}/${name}`);
    if (cached && (uid === undefined || cached.metadata.uid === uid)) return cached;
    try {
      return await this.o.serviceAccounts.get(name, { namespace, signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
  }

  /** Deletes a Secret whose account is gone, only if it is still the one looked at (its uid as precondition). */
  private async remove(secret: Secret, saName: string | undefined, signal: AbortSignal): Promise<void> {
    try {
      await this.o.secrets.delete(secret.metadata.name!, { namespace: secret.metadata.namespace!, preconditions: { uid: secret.metadata.uid! }, signal });
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND") || isPlatformError(err, "CONFLICT")) return;
      throw err;
    }
    this.log.info({ namespace: secret.metadata.namespace, secret: secret.metadata.name, serviceAccount: saName }, "token secret deleted: its service account does not exist");
  }
}

// Bootstrap tokens (upstream's `--enable-bootstrap-token-auth`): bearer tokens `<id>.<secret>` kept as Secrets
// `bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token` in kube-system, with which node agents join a cluster.
import { timingSafeEqual } from "node:crypto";
import { fromBase64 } from "../../api/base64-text.js";
import type { GroupNames } from "../../api/group.js";
import { silentLogger, type Logger } from "../../logger.js";
import { BOOTSTRAPPERS_GROUP } from "./bootstrap-policy.js";
import type { AuthnResult } from "./identity.js";
import type { ObjectLookup } from "./service-account-tokens.js";

/** A bootstrap token: six and sixteen characters of `[a-z0-9]` (kubeadm's format). */
export const BOOTSTRAP_TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
/** Extra groups a token may put its user in: only below `system:bootstrappers:`. */
export const BOOTSTRAP_EXTRA_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
/** The user of token `<id>`: `system:bootstrap:<id>`. */
export const BOOTSTRAP_USER_PREFIX = "system:bootstrap:";
/**
 * A bootstrap token's `expiration` in ms since the epoch: NaN when it is not an RFC 3339 time (upstream treats such a
 * token as expired). The authenticator and the token cleaner read it alike.
 */
export function bootstrapTokenExpiry(text: string): number {
  return /^\d{4}-\d\d-\d\dT/.test(text) ? Date.parse(text) : NaN;
}

/**
 * The `expiration` of a bootstrap token Secret (its `data` as stored, base64) in ms: NaN when unreadable, undefined
 * when it has none. The token cleaner, the bootstrap signer and `platform-ca token list` read it alike.
 */
export function secretExpiry(data: Readonly<Record<string, string>> | undefined): number | undefined {
  const text = fromBase64(data?.expiration);
  return text === undefined ? undefined : bootstrapTokenExpiry(text);
}

/** The name of the Secret of token `<id>`. */
export const bootstrapTokenSecretName = (id: string): string => `bootstrap-token-${id}`;

export interface BootstrapTokenAuthenticatorOptions {
  /** Reads a Secret (its type and decoded data) from storage. */
  readonly secret: ObjectLookup;
  readonly names: GroupNames;
  readonly clock: { now(): number };
  readonly logger?: Logger;
}

/**
 * As upstream's bootstrap token authenticator: a token of the format whose Secret exists (not being deleted), has the
 * type, the same `token-id` and `token-secret` (compared in constant time), `usage-bootstrap-authentication: "true"`
 * and no `expiration` in the past authenticates as `system:bootstrap:<id>` in `system:bootstrappers` and the Secret's
 * `auth-extra-groups`. Every refusal answers the same words (the reason is logged at debug): a caller cannot learn
 * which token ids exist.
 */
export class BootstrapTokenAuthenticator {
  readonly #o: BootstrapTokenAuthenticatorOptions;
  readonly #logger: Logger;

  constructor(options: BootstrapTokenAuthenticatorOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger();
  }

  /** undefined when the token does not have a bootstrap token's format (another authenticator may know it). */
  async authenticateToken(token: string): Promise<AuthnResult | undefined> {
    const m = BOOTSTRAP_TOKEN.exec(token);
    if (!m) return undefined;
    const [, id, secret] = m as unknown as [string, string, string];
    const why = await this.#problem(id, secret);
    if (typeof why === "string") {
      this.#logger.debug({ tokenId: id, reason: why }, "bootstrap token refused");
      return { error: "invalid bootstrap token" };
    }
    const { namespace } = this.#o.names.bootstrapTokens;
    const user = { username: `${BOOTSTRAP_USER_PREFIX}${id}`, groups: why.groups };
    return { user, dependsOn: [`secrets/${namespace}/${bootstrapTokenSecretName(id)}`], ...(why.validUntil !== undefined && { validUntil: why.validUntil }) };
  }

  /** The user's groups and when the token expires (no cache keeps it past then), or why the token is refused. */
  async #problem(id: string, tokenSecret: string): Promise<string | { groups: string[]; validUntil?: number }> {
    const { namespace, secretType } = this.#o.names.bootstrapTokens;
    const name = bootstrapTokenSecretName(id);
    let found;
    try {
      found = await this.#o.secret(namespace, name);
    } catch (err) {
      this.#logger.warn({ err, namespace, secret: name }, "cannot read a bootstrap token's Secret");
      return "its Secret cannot be read";
    }
    if (!found || found.deleting) return `no Secret ${namespace}/${name}`;
    if (found.type !== secretType) return `the Secret's type is ${JSON.stringify(found.type ?? "")}, not ${secretType}`;
    const data = found.data ?? {};
    const stored = Buffer.from(data["token-secret"] ?? "");
    const given = Buffer.from(tokenSecret);
    if (stored.length !== given.length || !timingSafeEqual(stored, given)) return "the token's secret does not match";
    if (data["token-id"] !== id) return "the Secret's token-id does not match";
    const expiration = data.expiration;
    const at = expiration === undefined ? undefined : bootstrapTokenExpiry(expiration);
    if (at !== undefined) {
      if (Number.isNaN(at)) return `the Secret's expiration ${JSON.stringify(expiration)} is not an RFC 3339 time`;
      if (at <= this.#o.clock.now()) return `the token expired at ${expiration}`;
    }
    if (data["usage-bootstrap-authentication"] !== "true") return "the token is not for authentication (usage-bootstrap-authentication)";
    // As upstream: comma-separated, each a valid name (no spaces, no empty entry), the result sorted without repeats.
    const listed = data["auth-extra-groups"] ?? "";
    const extra = listed === "" ? [] : listed.split(",");
    const bad = extra.find((g) => !BOOTSTRAP_EXTRA_GROUP.test(g));
    if (bad !== undefined) return `the extra group ${JSON.stringify(bad)} is not a group below system:bootstrappers:`;
    return { groups: [...new Set([BOOTSTRAPPERS_GROUP, ...extra])].sort(), ...(at !== undefined && { validUntil: at }) };
  }
}

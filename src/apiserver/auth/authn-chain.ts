// The authentication order: client certificate, then bearer token (token file, ServiceAccount JWT, bootstrap token, external JWT issuers), basic auth, anonymous.
import type { IncomingHttpHeaders } from "node:http";
import type { UserInfo } from "../../api/meta.js";
import type { TLSSocket } from "node:tls";
import { silentLogger, type Logger } from "../../logger.js";
import type { BasicAuthFileAuthenticator, TokenFileAuthenticator } from "./authn-token-file.js";
import type { ServiceAccountAuthenticator } from "./authn-service-account.js";
import type { BootstrapTokenAuthenticator } from "./authn-bootstrap-token.js";
import { peerCertificateChain, type X509Authenticator } from "./authn-x509.js";
import type { ConfiguredAuthentication } from "./authn-config-reload.js";
import type { AuthenticatedBy, LegacyTokenUse } from "./identity.js";
import { addGroups, anonymousUser, isAuthenticated, SYSTEM_AUTHENTICATED, type AuthnResult } from "./identity.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { TokenSuccessCache, tokenKey } from "./token-cache.js";
import type { TokenReviewStatus } from "../../api/types/authentication.js";
import { copyPlain } from "../../plain-data.js";

/** What authentication reads of a request; the pipeline's RequestCredentials fits this shape. */
export interface AuthnRequest {
  readonly headers: IncomingHttpHeaders;
  readonly tlsSocket?: TLSSocket;
  /** The presented chain (DER, leaf first) when already taken from the socket; read from `tlsSocket` otherwise. */
  readonly peerCertificates?: readonly Uint8Array[];
  /** The request path (without the query), for anonymous access limited by path. */
  readonly path?: string;
}

type Found = Extract<AuthnResult, { user: unknown }> & { readonly authenticator: AuthenticatedBy };

export interface AuthenticatorChainOptions {
  readonly x509?: X509Authenticator;
  readonly tokenFile?: TokenFileAuthenticator;
  readonly serviceAccount?: ServiceAccountAuthenticator;
  /** Bootstrap tokens (`--enable-bootstrap-token-auth`); without it such a token is not accepted. */
  readonly bootstrapToken?: BootstrapTokenAuthenticator;
  /** Without it, a Basic Authorization header is refused as unsupported. */
  readonly basicAuth?: BasicAuthFileAuthenticator;
  /** Requests without credentials become `system:anonymous` (group `system:unauthenticated`); default false (401). */
  readonly anonymous?: boolean;
  /**
   * The authentication configuration file's JWT issuers and anonymous access, read on every request (the file is
   * reloaded on change). Its `anonymous`, when set, replaces the `anonymous` option.
   */
  readonly configured?: () => ConfiguredAuthentication | undefined;
  /**
   * The API server's own audiences, for which a TokenReview without audiences checks a token (and the only ones a
   * token of an audience-agnostic authenticator holds for). Default: the ServiceAccount authenticator's.
   */
  readonly apiAudiences?: readonly string[];
  /** The clock of the token success cache. */
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Longest Authorization header looked at; anything longer is refused unread. */
const MAX_AUTHORIZATION_BYTES = 32 * 1024;

export class AuthenticatorChain {
  readonly #o: AuthenticatorChainOptions;
  readonly #logger: Logger;
  /** ServiceAccount and bootstrap tokens that authenticated in the last 10 s (the configured JWT issuers keep their own). */
  readonly #tokens: TokenSuccessCache<Found>;

  constructor(options: AuthenticatorChainOptions = {}) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger();
    this.#tokens = new TokenSuccessCache(options.clock ?? systemClock);
  }

  /**
   * The user, or why the request is not authenticated. A failing method does not stop later ones (a bad client
   * certificate with a good token authenticates); anonymous applies only when no credentials were presented at all.
   * Never throws.
   */
  async authenticate(request: AuthnRequest): Promise<AuthnResult> {
    try {
      const errors: string[] = [];
      const refused: { invalidatedLegacyToken?: LegacyTokenUse } = {};
      const found = this.#certificate(request, errors) ?? (await this.#authorization(request.headers?.authorization, errors, refused));
      if (found) return { user: withAuthenticatedGroup(found.user), authenticator: found.authenticator };
      if (errors.length > 0) return { error: errors.join("; "), ...refused };
      if (this.#anonymousAllowed(request.path)) return { user: anonymousUser(), authenticator: { authenticator: "anonymous" } };
      return { error: "no credentials were presented (a client certificate or a bearer token is required)" };
    } catch (err) {
      this.#logger.error({ err }, "authentication failed unexpectedly");
      return { error: "authentication failed: internal error" };
    }
  }

  /** Anonymous access: the configuration file's (only on its `conditions` paths when it lists some), else the option. */
  #anonymousAllowed(path: string | undefined): boolean {
    const configured = this.#o.configured?.()?.anonymous;
    if (!configured) return this.#o.anonymous === true;
    return configured.enabled && (configured.conditions.length === 0 || (path !== undefined && configured.conditions.includes(path)));
  }

  #certificate(request: AuthnRequest, errors: string[]): Found | undefined {
    if (!this.#o.x509) return undefined;
    const chain = request.peerCertificates ?? peerCertificateChain(request.tlsSocket);
    const r = this.#o.x509.authenticate(chain);
    if (r === undefined) return undefined;
    if (isAuthenticated(r)) return { ...r, authenticator: { authenticator: "x509" } };
    errors.push(r.error);
    return undefined;
  }

  async #authorization(header: unknown, errors: string[], refused: { invalidatedLegacyToken?: LegacyTokenUse }): Promise<Found | undefined> {
    if (header === undefined) return undefined;
    if (typeof header !== "string") {
      errors.push("the Authorization header must be given once");
      return undefined;
    }
    if (header.length > MAX_AUTHORIZATION_BYTES) {
      errors.push(`the Authorization header is above ${MAX_AUTHORIZATION_BYTES} bytes`);
      return undefined;
    }
    const m = /^\s*(\S+)(?:\s+(.*?))?\s*$/s.exec(header);
    const scheme = m?.[1]?.toLowerCase();
    const value = m?.[2] ?? "";
    let r: AuthnResult;
    if (scheme === "bearer") r = await this.#bearer(value);
    else if (scheme === "basic") r = { ...this.#basic(value), authenticator: { authenticator: "basic-auth" } };
    else r = { error: `the authentication scheme ${JSON.stringify((m?.[1] ?? "").slice(0, 32))} is not supported (use Bearer or a client certificate)` };
    if ("user" in r) return r as Found;
    errors.push(r.error);
    if (r.invalidatedLegacyToken) refused.invalidatedLegacyToken = r.invalidatedLegacyToken;
    return undefined;
  }

  /**
   * A TokenReview: whom `token` stands for, as a request bearing it is authenticated (the same authenticators, in the
   * same order, through the same cache), for `audiences` when the review names some — upstream's TokenReview. Only a
   * ServiceAccount token is checked against them; the others hold for the API server's own audiences only.
   */
  async reviewToken(token: string, audiences?: readonly string[]): Promise<TokenReviewStatus> {
    try {
      const r = await this.#bearer(token, audiences?.length ? audiences : undefined);
      if (!isAuthenticated(r)) return { authenticated: false, error: r.error };
      return { authenticated: true, user: copyPlain(withAuthenticatedGroup(r.user)), audiences: [...(r.audiences ?? this.#apiAudiences)] };
    } catch (err) {
      this.#logger.error({ err }, "token review failed unexpectedly");
      return { authenticated: false, error: "authentication failed: internal error" };
    }
  }

  get #apiAudiences(): readonly string[] {
    return this.#o.apiAudiences ?? this.#o.serviceAccount?.apiAudiences ?? [];
  }

  /**
   * As upstream orders bearer authenticators: the token file, ServiceAccount tokens, bootstrap tokens, then the
   * configured JWT issuers. `audiences`: a TokenReview's, when it names some (else the API server's own).
   */
  async #bearer(token: string, audiences?: readonly string[]): Promise<AuthnResult> {
    if (token === "") return { error: "the bearer token is empty" };
    const digest = tokenKey(token);
    const fromFile = this.#o.tokenFile?.authenticateToken(token, digest);
    if (fromFile) return this.#forAudiences({ ...fromFile, authenticator: { authenticator: "token-file" } }, audiences);
    // As upstream's token cache (token-cache.ts): a success is not checked again for 10 s — no signature, no reads of
    // the ServiceAccount, Pod or Secret behind the token. Refusals are not remembered. A review for named audiences
    // is remembered apart, under the token and those audiences (as upstream keys its cache).
    const key = audiences === undefined ? digest : tokenKey(JSON.stringify([audiences, token]));
    const remembered = this.#tokens.get(key);
    if (remembered) return remembered;
    const epoch = this.#tokens.epoch;
    const fromServiceAccount = await this.#o.serviceAccount?.authenticateToken(token, audiences);
    if (fromServiceAccount) return this.#remember(key, { authenticator: { authenticator: "service-account" }, ...fromServiceAccount }, epoch);
    const fromBootstrap = await this.#o.bootstrapToken?.authenticateToken(token);
    if (fromBootstrap) return this.#remember(key, this.#forAudiences({ ...fromBootstrap, authenticator: { authenticator: "bootstrap-token" } }, audiences), epoch);
    const fromJwt = await this.#o.configured?.()?.jwt.authenticateToken(token);
    if (fromJwt) return this.#forAudiences({ ...fromJwt, authenticator: { authenticator: "jwt", ...(fromJwt.issuer && { issuer: fromJwt.issuer }) } }, audiences);
    return { error: "invalid bearer token" };
  }

  /**
   * A success of an authenticator that does not know audiences (upstream's WrapAudienceAgnosticToken): valid for the
   * named audiences that are the API server's own, refused when none is.
   */
  #forAudiences<R extends AuthnResult>(result: R, audiences: readonly string[] | undefined): R | AuthnResult {
    if (audiences === undefined || !isAuthenticated(result)) return result;
    const api = this.#apiAudiences;
    const valid = audiences.filter((a) => api.includes(a));
    return valid.length > 0 ? { ...result, audiences: valid } : { error: "the token is not valid for the requested audiences" };
  }

  /**
   * A success as every request of the token gets it for the next 10 s (its user with system:authenticated, frozen),
   * unless an object changed while it was checked (since `epoch`).
   */
  #remember(key: string, result: AuthnResult, epoch: number): AuthnResult {
    if (!isAuthenticated(result)) return result;
    const { validUntil: _until, dependsOn: _objects, ...found } = result as Found;
    return this.#tokens.remember(key, { ...found, user: withAuthenticatedGroup(found.user) }, result, epoch);
  }

  /**
   * An object a token may stand for (`<plural>/<namespace>/<name>`: a ServiceAccount, Pod or Secret) was written or
   * deleted: the tokens checked against it are checked again at their next request.
   */
  objectChanged(object: string): void {
    this.#tokens.forget(object);
  }

  /** The server can no longer follow those objects: every token is checked again. */
  forgetTokens(): void {
    this.#tokens.forgetAll();
  }

  #basic(value: string): AuthnResult {
    if (!this.#o.basicAuth) return { error: "basic authentication is not supported" };
    const decoded = /^[A-Za-z0-9+/]+={0,2}$/.test(value) ? Buffer.from(value, "base64").toString("utf8") : "";
    const colon = decoded.indexOf(":");
    if (colon <= 0) return { error: "malformed basic credentials (expected base64 of user:password)" };
    const r = this.#o.basicAuth.authenticate(decoded.slice(0, colon), decoded.slice(colon + 1));
    return r;
  }
}

/**
 * The user with `system:authenticated`. A frozen user that already has it (a client certificate's, a token or basic-auth
 * file's: `frozenUser`) is handed on as it is, one object for every request of that credential; others are copied.
 */
function withAuthenticatedGroup(user: UserInfo): UserInfo {
  if (Object.isFrozen(user) && user.groups?.includes(SYSTEM_AUTHENTICATED)) return user;
  return { ...user, groups: addGroups(user.groups, SYSTEM_AUTHENTICATED) };
}

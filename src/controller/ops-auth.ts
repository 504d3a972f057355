// Delegated authentication (client certificate, TokenReview) and authorization (SubjectAccessReview) of the ops
// endpoint against the API server the controllers use, as upstream's controller manager secures its port.
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { GroupNames } from "../api/group.js";
import type { UserInfo } from "../api/meta.js";
import { AUTHENTICATION_VERSION, TOKEN_REVIEW_KIND, type TokenReview } from "../api/types/authentication.js";
import { AUTHORIZATION_VERSION, SUBJECT_ACCESS_REVIEW_KIND, type SubjectAccessReview, type SubjectAccessReviewSpec } from "../api/types/authorization.js";
import { forbiddenError } from "../apiserver/auth/authorizer.js";
import { peerCertificateChain, X509Authenticator } from "../apiserver/auth/authn-x509.js";
import { TokenSuccessCache, tokenKey } from "../apiserver/auth/token-cache.js";
import { PlatformError, toPlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import { AllowedReviewCache, DEFAULT_REVIEW_CACHE_TTL_MS } from "./controllers/review-cache.js";
import type { ResourceSource } from "./controllers/controller-set.js";

/** Upstream's `--authorization-always-allow-paths` default: probes need no credentials and no API server. */
export const DEFAULT_ALWAYS_ALLOW_PATHS: readonly string[] = ["/healthz", "/readyz", "/livez"];

export interface OpsAuthOptions {
  /** The API server's client: TokenReviews and SubjectAccessReviews are created through it. */
  readonly client: ResourceSource;
  readonly names: GroupNames;
  /** PEM CA certificates a client certificate must chain to (upstream's --client-ca-file); none: tokens only. */
  readonly clientCas?: readonly string[];
  /** Paths served without authentication or authorization; a trailing `*` matches a prefix. */
  readonly alwaysAllowPaths?: readonly string[];
  /** The clock client certificates are checked at and remembered answers expire by (default the system clock). */
  readonly clock?: { now(): number };
  readonly logger: Logger;
}

/** Whether `path` is one of `patterns` (exact, or a prefix when the pattern ends in `*`). */
export function pathAllowed(path: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith("*") ? path.startsWith(p.slice(0, -1)) : path === p));
}

export class DelegatedOpsAuth {
  readonly #o: OpsAuthOptions;
  readonly #x509: X509Authenticator | undefined;
  readonly #allowed: AllowedReviewCache;
  /**
   * Bearer tokens the API server authenticated, remembered 10 s as upstream's delegating authenticator does
   * (`--authentication-token-webhook-cache-ttl`): a scraper sends its token every few seconds. Refusals are asked
   * again each time.
   */
  readonly #tokens: TokenSuccessCache<{ readonly user: UserInfo }>;
  readonly #alwaysAllow: readonly string[];

  constructor(o: OpsAuthOptions) {
    this.#o = o;
    this.#alwaysAllow = o.alwaysAllowPaths ?? DEFAULT_ALWAYS_ALLOW_PATHS;
    const clock = o.clock ?? Date;
    this.#x509 = o.clientCas && o.clientCas.length > 0 ? new X509Authenticator({ trustPool: o.clientCas, clock }) : undefined;
    this.#tokens = new TokenSuccessCache(clock);
    this.#allowed = new AllowedReviewCache(DEFAULT_REVIEW_CACHE_TTL_MS, () => clock.now());
  }

  /**
   * Resolves when the request may be served; rejects with UNAUTHORIZED (no or bad credentials), FORBIDDEN (the API
   * server's RBAC says no) or the error met asking the API server.
   */
  async check(req: IncomingMessage, path: string): Promise<void> {
    if (pathAllowed(path, this.#alwaysAllow)) return;
    const user = await this.#authenticate(req);
    const spec: SubjectAccessReviewSpec = {
      user: user.username,
      ...(user.uid !== undefined && { uid: user.uid }),
      ...(user.groups !== undefined && { groups: [...user.groups] }),
      ...(user.extra !== undefined && { extra: structuredClone(user.extra) as Record<string, string[]> }),
      nonResourceAttributes: { path, verb: "get" },
    };
    if (this.#allowed.allowed(spec)) return;
    const review = await this.#create<SubjectAccessReview>(this.#o.names.authorization, AUTHORIZATION_VERSION, "subjectaccessreviews", {
      apiVersion: `${this.#o.names.authorization}/${AUTHORIZATION_VERSION}`,
      kind: SUBJECT_ACCESS_REVIEW_KIND,
      metadata: {},
      spec,
    });
    if (review.status?.allowed !== true) throw forbiddenError({ user, verb: "get", resourceRequest: false, path }, review.status?.reason);
    this.#allowed.remember(spec);
  }

  /** The client certificate's user when one is presented, else the bearer token's as the API server reviews it. */
  async #authenticate(req: IncomingMessage): Promise<UserInfo> {
    const chain = peerCertificateChain((req.socket as TLSSocket).encrypted ? (req.socket as TLSSocket) : undefined);
    if (chain.length > 0) {
      const r = this.#x509?.authenticate(chain) ?? { error: "x509: client certificates are not accepted here (no client CA is configured)" };
      if ("user" in r) return r.user;
      throw new PlatformError("UNAUTHORIZED", `Unauthorized: ${r.error}`);
    }
    const m = /^\s*bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    if (!m) throw new PlatformError("UNAUTHORIZED", "Unauthorized: no credentials were presented (a client certificate or a bearer token is required)");
    const token = m[1]!;
    const key = tokenKey(token);
    const known = this.#tokens.get(key);
    if (known) return known.user;
    const epoch = this.#tokens.epoch;
    const review = await this.#create<TokenReview>(this.#o.names.authentication, AUTHENTICATION_VERSION, "tokenreviews", {
      apiVersion: `${this.#o.names.authentication}/${AUTHENTICATION_VERSION}`,
      kind: TOKEN_REVIEW_KIND,
      metadata: {},
      spec: { token },
    });
    if (review.status?.authenticated !== true || !review.status.user?.username) throw new PlatformError("UNAUTHORIZED", "Unauthorized: invalid bearer token");
    return this.#tokens.remember(key, { user: review.status.user }, {}, epoch).user;
  }

  /** Creates a review; an API server that cannot answer is a 500 naming why (logged once per failure). */
  async #create<T extends TokenReview | SubjectAccessReview>(group: string, version: string, plural: string, body: T): Promise<T> {
    try {
      return await this.#o.client.resource<T>({ group, version, plural, namespaced: false }).create(body);
    } catch (err) {
      const e = toPlatformError(err);
      this.#o.logger.error({ err: e, review: plural }, "cannot ask the API server to authenticate or authorize an ops request");
      throw new PlatformError("INTERNAL", `cannot ask the API server (${plural}): ${e.message}`, { cause: err });
    }
  }
}

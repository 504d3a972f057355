// Bearer-token authentication with ServiceAccount JWTs: the API server's own audiences and live object checks.
import { decodeJwt } from "jose";
import { invalidOption } from "../../errors.js";
import type { AuthnResult, LegacyTokenUse } from "./identity.js";
import type { ObjectLookup, ServiceAccountTokens, TokenLookups } from "./service-account-tokens.js";

export interface ServiceAccountAuthenticatorOptions {
  readonly tokens: ServiceAccountTokens;
  readonly lookups: TokenLookups;
  /** Told of each refused use of a token Secret's token labelled invalid (upstream counts them). */
  readonly onInvalidatedLegacyToken?: () => void;
}

export class ServiceAccountAuthenticator {
  readonly #tokens: ServiceAccountTokens;
  readonly #lookups: TokenLookups;
  readonly #onInvalidated: (() => void) | undefined;

  constructor(options: ServiceAccountAuthenticatorOptions) {
    if (!options?.tokens) throw invalidOption("tokens", "to be ServiceAccountTokens", options?.tokens);
    if (typeof options.lookups?.serviceAccount !== "function") throw invalidOption("lookups.serviceAccount", "to be a function", options.lookups?.serviceAccount);
    this.#tokens = options.tokens;
    this.#lookups = options.lookups;
    this.#onInvalidated = options.onInvalidatedLegacyToken;
  }

  /** The API server's own audiences: what a token is checked against when no audiences are asked for. */
  get apiAudiences(): readonly string[] {
    return this.#tokens.apiAudiences;
  }

  /**
   * undefined when the token is not a ServiceAccount token of this server (another authenticator may know it).
   * `audiences`: a TokenReview's; without them the token is checked against the API server's own (a request's token).
   */
  async authenticateToken(token: string, audiences?: readonly string[]): Promise<AuthnResult | undefined> {
    if (!this.#tokens.looksLikeOurs(token)) return undefined;
    let legacyToken: LegacyTokenUse | undefined;
    const read: string[] = [];
    const status = await this.#tokens.review(token, {
      ...(audiences !== undefined && { audiences }),
      lookups: recorded(this.#lookups, read),
      onLegacyUse: (use) => {
        if (use.invalidated) this.#onInvalidated?.();
        legacyToken = use;
      },
    });
    if (status.authenticated && status.user) {
      // A bound token's `exp` (verified by the review): no cache keeps it authenticated past then. A token Secret's has none.
      const exp = decodeJwt(token).exp;
      const authenticator = { authenticator: "service-account", ...(legacyToken && { legacyToken }) } as const;
      return {
        user: status.user,
        authenticator,
        dependsOn: read,
        // Those of the asked (or the API server's) audiences the token holds: a review answers them.
        ...(status.audiences && { audiences: status.audiences }),
        ...(typeof exp === "number" && { validUntil: exp * 1000 }),
      };
    }
    const error = `invalid ServiceAccount token: ${status.error ?? "not authenticated"}`;
    return legacyToken?.invalidated ? { error, invalidatedLegacyToken: legacyToken } : { error };
  }
}

/** The lookups, each object read noted in `read` as `<plural>/<namespace>/<name>` (what the token's check depends on). */
function recorded(lookups: TokenLookups, read: string[]): TokenLookups {
  const noting =
    (plural: string, lookup: ObjectLookup): ObjectLookup =>
    (ns, name) => {
      read.push(`${plural}/${ns}/${name}`);
      return lookup(ns, name);
    };
  return {
    ...lookups,
    serviceAccount: noting("serviceaccounts", lookups.serviceAccount),
    ...(lookups.pod && { pod: noting("pods", lookups.pod) }),
    ...(lookups.secret && { secret: noting("secrets", lookups.secret) }),
  };
}

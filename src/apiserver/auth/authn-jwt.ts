// Bearer tokens from external OIDC issuers (AuthenticationConfiguration `jwt`): signature, iss/aud/exp/nbf, claim rules and mappings.
import type { Agent } from "node:https";
import type { UserInfo } from "../../api/meta.js";
import { celValue } from "../../cel/index.js";
import type { ClaimSource, JwtAuthenticatorConfig, LoadedAuthenticationConfig } from "../../config/authentication-config.js";
import { PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type Clock } from "../../time/clock.js";
import type { AuthnResult } from "./identity.js";
import { OidcKeySource } from "./oidc-keys.js";
import { isJwtAlgorithm, JWT_ALGORITHMS, parseCompactJws, verifyJws, type CompactJws } from "./jws.js";
import { TokenSuccessCache, tokenKey } from "./token-cache.js";

/** The clock skew `nbf` is given, as upstream's verifier (exp has none). */
const NBF_LEEWAY_SECONDS = 300;

type Claims = Record<string, unknown>;

class TokenRefused extends Error {}
const refuse = (message: string): never => {
  throw new TokenRefused(message);
};

/** The value of a CEL program for a mapping or a rule; its failure refuses the token with `what` in the message. */
function evaluate(program: { evaluate(v: Record<string, unknown>): unknown }, vars: Record<string, unknown>, what: string): unknown {
  try {
    return program.evaluate(vars);
  } catch (err) {
    return refuse(`error evaluating ${what}: ${err instanceof PlatformError ? err.message : String(err)}`);
  }
}

/** A CEL string-or-list result as upstream reads it: "" / [] / null are no value; empty strings in a list are dropped. */
function stringList(v: unknown): string[] {
  if (v === null || v === undefined || v === "") return [];
  if (typeof v === "string") return [v];
  return (v as string[]).filter((s) => s !== "");
}

/** One issuer's authenticator. */
export class JwtAuthenticator {
  readonly config: JwtAuthenticatorConfig;
  readonly keys: OidcKeySource;
  readonly #clock: Clock;

  constructor(config: JwtAuthenticatorConfig, keys: OidcKeySource, clock: Clock = systemClock) {
    this.config = config;
    this.keys = keys;
    this.#clock = clock;
  }

  /** The user of a token whose `iss` is this issuer, or why it is refused. */
  async authenticate(jws: CompactJws): Promise<AuthnResult> {
    try {
      const claims = await this.#verify(jws);
      return { user: this.#map(claims) };
    } catch (err) {
      if (err instanceof TokenRefused) return { error: `oidc: ${err.message}` };
      throw err;
    }
  }

  async #verify(jws: CompactJws): Promise<Claims> {
    const { alg, kid } = jws.header;
    if (!isJwtAlgorithm(alg)) return refuse(`signing algorithm ${JSON.stringify(alg ?? null)} is not accepted (only ${JWT_ALGORITHMS.join(", ")})`);
    if (kid !== undefined && typeof kid !== "string") refuse("the kid header is not a string");
    const keys = await this.keys.candidates({ ...(kid !== undefined && { kid: kid as string }), alg }).catch((err: Error) => refuse(err.message));
    if (keys.length === 0) refuse(`no key of issuer ${this.config.issuer.url} matches the token (kid ${JSON.stringify(kid ?? null)}, alg ${alg})`);
    if (!keys.some((key) => verifyJws(jws, alg, key))) refuse("failed to verify the signature");
    const claims = jws.payload;
    const nowSeconds = this.#clock.now() / 1000;
    if (claims.iss !== this.config.issuer.url) refuse(`issuer ${JSON.stringify(claims.iss)} is not ${this.config.issuer.url}`);
    const aud = typeof claims.aud === "string" ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
    if (!aud.some((a) => this.config.issuer.audiences.includes(a as string))) refuse(`expected audience in ${JSON.stringify(this.config.issuer.audiences)}, got ${JSON.stringify(claims.aud ?? null)}`);
    if (typeof claims.exp !== "number") refuse("the token has no numeric exp claim");
    if ((claims.exp as number) < nowSeconds) refuse(`token is expired (exp ${claims.exp})`);
    if (claims.nbf !== undefined) {
      if (typeof claims.nbf !== "number") refuse("the nbf claim is not a number");
      if (nowSeconds + NBF_LEEWAY_SECONDS < (claims.nbf as number)) refuse(`current time is before the nbf (not before) time ${claims.nbf}`);
    }
    if (claims.iat !== undefined && typeof claims.iat !== "number") refuse("the iat claim is not a number");
    return claims;
  }

  #claimString(claims: Claims, name: string, what: string): string {
    if (!Object.hasOwn(claims, name)) return refuse(`${what} claim ${JSON.stringify(name)} is not present`);
    const v = claims[name];
    if (typeof v !== "string") return refuse(`${what} claim ${JSON.stringify(name)} is not a string`);
    return v;
  }

  #map(claims: Claims): UserInfo {
    const m = this.config.claimMappings;
    // Converted once per token for every expression (whole JSON numbers become CEL ints, as upstream).
    const vars = { claims: celValue(claims) };
    const username = this.#username(claims, m.username, vars);
    const groups = this.#groups(claims, m.groups, vars);
    let uid = "";
    if (m.uid && "claim" in m.uid) uid = this.#claimString(claims, m.uid.claim, "uid");
    else if (m.uid) uid = (evaluate(m.uid.expression, vars, "uid claim expression") as string | null) ?? "";
    const extra: Record<string, string[]> = {};
    for (const e of m.extra) {
      const values = stringList(evaluate(e.valueExpression, vars, `extra claim expression ${e.valueExpression.expression}`));
      if (values.length > 0) extra[e.key] = values;
    }
    for (const rule of this.config.claimValidationRules) {
      if ("claim" in rule) {
        const value = this.#claimString(claims, rule.claim, "required");
        if (value !== rule.requiredValue) refuse(`required claim ${rule.claim} value does not match. Got = ${value}, want = ${rule.requiredValue}`);
      } else if (evaluate(rule.expression, vars, "claim validation expression") !== true) {
        refuse(`claim validation expression '${rule.expression.expression}' failed${rule.message ? `: ${rule.message}` : ""}`);
      }
    }
    const user: UserInfo = { username, ...(uid !== "" && { uid }), groups, ...(Object.keys(extra).length > 0 && { extra }) };
    if (this.config.userValidationRules.length > 0) {
      const asSeen = { user: { username, uid, groups, extra } };
      for (const rule of this.config.userValidationRules) {
        if (evaluate(rule.expression, asSeen, "user validation rule") !== true) refuse(`user validation rule '${rule.expression.expression}' failed${rule.message ? `: ${rule.message}` : ""}`);
      }
    }
    return user;
  }

  #username(claims: Claims, source: ClaimSource, vars: Record<string, unknown>): string {
    let username: string;
    if ("expression" in source) {
      const v = evaluate(source.expression, vars, "username claim expression");
      if (typeof v !== "string") return refuse("username claim expression must return a string");
      username = v;
    } else {
      username = this.#claimString(claims, source.claim, "username");
      // As upstream: with the email as username, an email_verified claim that is present must be true.
      if (source.claim === "email" && Object.hasOwn(claims, "email_verified")) {
        if (typeof claims.email_verified !== "boolean") refuse("the email_verified claim is not a boolean");
        if (claims.email_verified !== true) refuse("email not verified");
      }
      username = source.prefix + username;
    }
    if (username === "") refuse("the mapped username is empty");
    return username;
  }

  #groups(claims: Claims, source: ClaimSource | undefined, vars: Record<string, unknown>): string[] {
    if (!source) return [];
    if ("claim" in source) {
      if (!Object.hasOwn(claims, source.claim)) return [];
      const v = claims[source.claim];
      const list = typeof v === "string" ? [v] : Array.isArray(v) && v.every((g) => typeof g === "string") ? (v as string[]) : refuse(`groups claim ${JSON.stringify(source.claim)} is not a string or a list of strings`);
      return list.map((g) => source.prefix + g);
    }
    return stringList(evaluate(source.expression, vars, "groups claim expression"));
  }
}

export interface JwtAuthenticatorsOptions {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** The agent that dials an issuer (by its egressSelectorType); default node's global agent. */
  readonly agentFor?: (egressSelectorType: string | undefined) => Agent | undefined;
  readonly refetchIntervalMs?: number;
}

type Authenticated = AuthnResult & { issuer?: string };

/**
 * The JWT authenticators of one configuration file, tried by the token's `iss` (at most one issuer matches). A token
 * that authenticated is remembered for 10 s (token-cache.ts), never past its `exp`: checking its signature and CEL
 * mappings costs 0.1–0.3 ms. The cache is this object's, and a reload builds new authenticators, so nothing is
 * remembered across configurations.
 */
export class JwtAuthenticators {
  readonly #byIssuer: ReadonlyMap<string, JwtAuthenticator>;
  readonly #cache: TokenSuccessCache<Authenticated & { user: UserInfo }>;

  constructor(config: Pick<LoadedAuthenticationConfig, "jwt">, options: JwtAuthenticatorsOptions = {}) {
    const clock = options.clock ?? systemClock;
    this.#cache = new TokenSuccessCache(clock);
    const logger = options.logger ?? silentLogger();
    this.#byIssuer = new Map(
      config.jwt.map((a) => {
        const agent = options.agentFor?.(a.issuer.egressSelectorType);
        const keys = new OidcKeySource({
          issuerURL: a.issuer.url,
          ...(a.issuer.discoveryURL && { discoveryURL: a.issuer.discoveryURL }),
          ...(a.issuer.certificateAuthority && { certificateAuthority: a.issuer.certificateAuthority }),
          ...(agent && { agent }),
          ...(options.refetchIntervalMs !== undefined && { refetchIntervalMs: options.refetchIntervalMs }),
          clock,
          logger,
        });
        return [a.issuer.url, new JwtAuthenticator(a, keys, clock)];
      }),
    );
  }

  get issuers(): readonly string[] {
    return [...this.#byIssuer.keys()];
  }

  /** Starts fetching every issuer's keys; resolves when all are ready (or stopped). */
  start(): Promise<void> {
    return Promise.all([...this.#byIssuer.values()].map((a) => a.keys.start())).then(() => undefined);
  }

  stop(): void {
    for (const a of this.#byIssuer.values()) a.keys.stop();
  }

  /** Issuers whose keys are not fetched yet, with why. */
  notReady(): { issuer: string; reason: string }[] {
    return [...this.#byIssuer.values()].filter((a) => !a.keys.ready).map((a) => ({ issuer: a.config.issuer.url, reason: a.keys.notReadyReason }));
  }

  /** undefined when the token is not a JWT of a configured issuer (another authenticator may know it). */
  async authenticateToken(token: string): Promise<Authenticated | undefined> {
    const key = tokenKey(token);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const jws = parseCompactJws(token);
    const iss = jws?.payload.iss;
    const authenticator = typeof iss === "string" ? this.#byIssuer.get(iss) : undefined;
    if (!jws || !authenticator) return undefined;
    const result: Authenticated = { ...(await authenticator.authenticate(jws)), issuer: authenticator.config.issuer.url };
    return "user" in result ? this.#cache.remember(key, result, { validUntil: (jws.payload.exp as number) * 1000 }, this.#cache.epoch) : result;
  }
}

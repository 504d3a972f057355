// ServiceAccount tokens: ES256 JWTs issued for TokenRequest and checked for TokenReview and bearer authentication.
import { randomUUID } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from "jose";
import type { GroupNames } from "../../api/group.js";
import type { UserInfo } from "../../api/meta.js";
import type { TokenReviewStatus } from "../../api/types/authentication.js";
import { invalidOption, PlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { silentLogger, type Logger } from "../../logger.js";
import { addGroups, serviceAccountGroups, serviceAccountUsername, SYSTEM_AUTHENTICATED, type LegacyTokenUse } from "./identity.js";
import { readLegacyClaims, type LegacyTokenSubject } from "./legacy-tokens.js";
import { loadOrCreateSigningKey, type SigningKey } from "./sa-signing-key.js";

export const TOKEN_MIN_SECONDS = 600;
export const TOKEN_DEFAULT_SECONDS = 3600;
/** Tokens above this size are refused before any parsing. */
export const TOKEN_MAX_BYTES = 16 * 1024;
const ALG = "ES256";

type MaybePromise<T> = T | Promise<T>;
/** What a lookup tells of a current object; `serviceAccountName` only for Pods, `type` and `data` only for Secrets. */
export interface FoundObject {
  readonly uid?: string;
  readonly serviceAccountName?: string;
  /** Being deleted (a deletionTimestamp): no token stands for it any more. */
  readonly deleting?: boolean;
  readonly labels?: Readonly<Record<string, string>>;
  readonly type?: string;
  /** A Secret's `data`, each value decoded (UTF-8). */
  readonly data?: Readonly<Record<string, string>>;
  /** A ServiceAccount's `secrets` (their names): a token Secret listed there counts as auto-generated. */
  readonly secretNames?: readonly string[];
}
export type ObjectLookup = (namespace: string, name: string) => MaybePromise<FoundObject | undefined>;

/** What a review is asked: the audiences wanted (the API server's when absent) and how to read the objects it checks. */
export interface ReviewOptions {
  readonly audiences?: readonly string[];
  readonly lookups: TokenLookups;
  /** Told when a token Secret's token authenticates (its audit annotations and metrics are the caller's). */
  readonly onLegacyUse?: (use: LegacyTokenUse) => void;
}

/** Current objects a review checks a token against: it is valid only while they exist with the same uid. */
export interface TokenLookups {
  readonly serviceAccount: ObjectLookup;
  readonly pod?: ObjectLookup;
  readonly secret?: ObjectLookup;
  /** Sets `label` to `value` on the Secret `namespace/name`, if it still has `uid` (a token Secret's last use). */
  readonly labelSecret?: (namespace: string, name: string, uid: string, label: string, value: string) => Promise<void>;
}

export interface BoundObject {
  readonly kind: "Pod" | "Secret";
  readonly name: string;
  readonly uid: string;
  readonly apiVersion?: string;
}

export interface IssueTokenRequest {
  readonly namespace: string;
  readonly serviceAccount: { readonly name: string; readonly uid: string };
  readonly audiences: readonly string[];
  /** Default 3600; at least 600; above the server maximum it is shortened to it. */
  readonly expirationSeconds?: number;
  readonly boundObject?: BoundObject;
}

export interface IssuedToken {
  readonly token: string;
  /** RFC 3339, seconds precision. */
  readonly expirationTimestamp: string;
  /** The lifetime actually granted. */
  readonly expirationSeconds: number;
}

export interface ServiceAccountTokensOptions {
  /** Directory holding `sa-signing-key.pem` (0600) and `sa-signing-key.pub`. */
  readonly dataDir: string;
  /** The `iss` of every token, e.g. `https://platform-ca.platform-system.svc`. */
  readonly issuer: string;
  readonly names: GroupNames;
  /** The API server's own audiences: what a review with no audiences checks against; default [issuer]. */
  readonly apiAudiences?: readonly string[];
  /** Longest lifetime granted; longer requests are shortened. Default 48 hours. */
  readonly maxExpirationSeconds?: number;
  /** Clock skew tolerated on exp and nbf; default 60 seconds. */
  readonly leewaySeconds?: number;
  readonly clock: { now(): number };
  readonly logger?: Logger;
}

interface PrivateClaim {
  namespace?: unknown;
  serviceaccount?: { name?: unknown; uid?: unknown };
  pod?: { name?: unknown; uid?: unknown };
  secret?: { name?: unknown; uid?: unknown };
}

const nonEmpty = (v: unknown): v is string => typeof v === "string" && v !== "";
const refused = (error: string): TokenReviewStatus => ({ authenticated: false, error });

export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: readonly string[];
  readonly #o: ServiceAccountTokensOptions;
  readonly #max: number;
  readonly #leeway: number;
  readonly #logger: Logger;
  #key: SigningKey | undefined;

  constructor(options: ServiceAccountTokensOptions) {
    if (!nonEmpty(options?.dataDir)) throw invalidOption("dataDir", "to be a directory path", options?.dataDir);
    if (!nonEmpty(options.issuer)) throw invalidOption("issuer", "to be a non-empty string", options.issuer);
    if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
    if (typeof options.clock?.now !== "function") throw invalidOption("clock", "to have now()", options.clock);
    const audiences = options.apiAudiences ?? [options.issuer];
    if (!Array.isArray(audiences) || audiences.length === 0 || !audiences.every(nonEmpty)) throw invalidOption("apiAudiences", "to be a non-empty list of strings", audiences);
    const max = options.maxExpirationSeconds ?? 48 * 3600;
    if (!Number.isSafeInteger(max) || max < TOKEN_MIN_SECONDS) throw invalidOption("maxExpirationSeconds", `to be an integer ≥ ${TOKEN_MIN_SECONDS}`, max);
    const leeway = options.leewaySeconds ?? 60;
    if (!Number.isSafeInteger(leeway) || leeway < 0 || leeway > 600) throw invalidOption("leewaySeconds", "to be an integer 0–600", leeway);
    this.#o = options;
    this.issuer = options.issuer;
    this.apiAudiences = [...audiences];
    this.#max = max;
    this.#leeway = leeway;
    this.#logger = options.logger ?? silentLogger();
  }

  /** Loads the signing key from the data directory, creating it on first start. */
  async start(): Promise<void> {
    this.#key ??= await loadOrCreateSigningKey(this.#o.dataDir, this.#logger);
  }

  stop(): void {}

  /** The PEM public key tokens verify with (for other audiences that check tokens themselves). */
  get publicKeyPem(): string {
    return this.#signingKey().publicKeyPem;
  }

  async issue(request: IssueTokenRequest): Promise<IssuedToken> {
    const key = this.#signingKey();
    const { namespace, serviceAccount: sa, audiences, boundObject } = request ?? ({} as IssueTokenRequest);
    if (!nonEmpty(namespace)) throw invalidOption("namespace", "to be a non-empty string", namespace);
    if (!nonEmpty(sa?.name) || !nonEmpty(sa.uid)) throw invalidOption("serviceAccount", "to have a name and a uid", sa);
    if (!Array.isArray(audiences) || audiences.length === 0 || !audiences.every(nonEmpty)) throw invalidOption("audiences", "to be a non-empty list of strings", audiences);
    const requested = request.expirationSeconds ?? TOKEN_DEFAULT_SECONDS;
    if (!Number.isSafeInteger(requested) || requested < TOKEN_MIN_SECONDS) throw invalidOption("expirationSeconds", `≥ ${TOKEN_MIN_SECONDS}`, requested);
    if (boundObject !== undefined && (!["Pod", "Secret"].includes(boundObject.kind) || !nonEmpty(boundObject.name) || !nonEmpty(boundObject.uid))) {
      throw invalidOption("boundObject", "to be a Pod or Secret with a name and a uid", boundObject);
    }
    const seconds = Math.min(requested, this.#max);
    const now = Math.floor(this.#o.clock.now() / 1000);
    const claim: Record<string, unknown> = { namespace, serviceaccount: { name: sa.name, uid: sa.uid } };
    if (boundObject) claim[boundObject.kind === "Pod" ? "pod" : "secret"] = { name: boundObject.name, uid: boundObject.uid };
    const token = await new SignJWT({ [this.#o.names.tokenClaim]: claim })
      .setProtectedHeader({ alg: ALG, kid: key.keyId, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(serviceAccountUsername(namespace, sa.name))
      .setAudience([...audiences])
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + seconds)
      .setJti(randomUUID())
      .sign(key.privateKey);
    return { token, expirationSeconds: seconds, expirationTimestamp: rfc3339(new Date((now + seconds) * 1000)) };
  }

  /**
   * A TokenReview status for `token`: signature (our key, ES256 only), exp/nbf with leeway, audience intersection, and
   * the ServiceAccount and bound object still existing with the same uid. Never throws on bad input.
   */
  async review(token: unknown, options: ReviewOptions): Promise<TokenReviewStatus> {
    if (typeof token !== "string" || token === "") return refused("the token is empty");
    if (token.length > TOKEN_MAX_BYTES) return refused(`the token is ${token.length} bytes, above the limit of ${TOKEN_MAX_BYTES}`);
    if (!this.looksLikeOurs(token)) return refused("the token is not a ServiceAccount token of this server");
    if (decodeJwt(token).iss === this.#o.names.legacyToken.issuer) return this.#reviewLegacy(token, options);
    const key = this.#signingKey();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key.publicKey, {
        algorithms: [ALG],
        issuer: this.issuer,
        currentDate: new Date(this.#o.clock.now()),
        clockTolerance: this.#leeway,
        requiredClaims: ["exp", "nbf", "sub", "aud"],
      }));
    } catch (err) {
      return refused(verifyFailure(err));
    }
    const wanted = options?.audiences && options.audiences.length > 0 ? options.audiences : this.apiAudiences;
    const tokenAudiences = typeof payload.aud === "string" ? [payload.aud] : (payload.aud ?? []);
    const audiences = wanted.filter((a) => tokenAudiences.includes(a));
    if (audiences.length === 0) return refused(`the token audiences ${JSON.stringify(tokenAudiences)} do not include any of ${JSON.stringify(wanted)}`);
    const claim = payload[this.#o.names.tokenClaim] as PrivateClaim | undefined;
    const ns = claim?.namespace;
    const name = claim?.serviceaccount?.name;
    const uid = claim?.serviceaccount?.uid;
    if (!nonEmpty(ns) || !nonEmpty(name) || !nonEmpty(uid) || payload.sub !== serviceAccountUsername(ns, name)) {
      return refused("the token's ServiceAccount claims are missing or inconsistent");
    }
    try {
      const problem = await this.#checkObjects(ns, name, uid, claim!, options?.lookups);
      if (problem) return refused(problem);
    } catch (err) {
      this.#logger.warn({ err, namespace: ns, serviceAccount: name }, "cannot look up the objects a token is bound to");
      return refused(`cannot check the token's objects: ${(err as Error).message}`);
    }
    return { authenticated: true, user: this.#user(ns, name, uid, claim!, payload.jti), audiences };
  }

  /**
   * Cheap pre-check (no signature): a JWS whose payload names our issuer, or the token Secrets' issuer. Lets other
   * token authenticators go first.
   */
  looksLikeOurs(token: string): boolean {
    try {
      if (token.length > TOKEN_MAX_BYTES || token.split(".").length !== 3) return false;
      const header = decodeProtectedHeader(token);
      const iss = decodeJwt(token).iss;
      return typeof header.alg === "string" && (iss === this.issuer || iss === this.#o.names.legacyToken.issuer);
    } catch {
      return false;
    }
  }

  /**
   * A token Secret's token, as upstream's legacy validator: our signature, the claims, the Secret still there (not
   * being deleted, not labelled invalid) holding this very token, and the ServiceAccount there with the same uid.
   * It has no audience: it stands for the API server's own (a review for other audiences refuses it).
   */
  async #reviewLegacy(token: string, options: ReviewOptions): Promise<TokenReviewStatus> {
    const audiences = options?.audiences && options.audiences.length > 0 ? options.audiences.filter((a) => this.apiAudiences.includes(a)) : this.apiAudiences;
    if (audiences.length === 0) return refused(`a token Secret's token is valid only for the API server's audiences ${JSON.stringify(this.apiAudiences)}, not ${JSON.stringify(options.audiences)}`);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.#signingKey().publicKey, { algorithms: [ALG], issuer: this.#o.names.legacyToken.issuer }));
    } catch (err) {
      return refused(verifyFailure(err));
    }
    const s = readLegacyClaims(this.#o.names, payload);
    if (typeof s === "string") return refused(s);
    const username = serviceAccountUsername(s.namespace, s.serviceAccountName);
    const { secret: secretLookup, serviceAccount: saLookup } = options?.lookups ?? ({} as Partial<TokenLookups>);
    if (typeof secretLookup !== "function" || typeof saLookup !== "function") return refused("cannot check the token: no Secret or ServiceAccount lookup is configured");
    try {
      const secret = await secretLookup(s.namespace, s.secretName);
      if (!secret || secret.deleting) return refused(`the token's Secret ${s.namespace}/${s.secretName} has been deleted`);
      if (secret.data?.token !== token) return refused(`the token does not match the one in Secret ${s.namespace}/${s.secretName}`);
      const sa = await saLookup(s.namespace, s.serviceAccountName);
      if (!sa || sa.deleting) return refused(`the ServiceAccount ${s.namespace}/${s.serviceAccountName} has been deleted`);
      if (sa.uid !== s.serviceAccountUid) return refused(`the ServiceAccount UID (${sa.uid ?? ""}) does not match the token's (${s.serviceAccountUid})`);
      const use = { subject: username, secret: s.secretName, autoGenerated: sa.secretNames?.includes(s.secretName) === true };
      // Upstream's order and tracking: a token labelled invalid is refused after the account checks, and its use is
      // still recorded (the last-used label, the caller's count), so an administrator sees who still presents it.
      const invalidSince = secret.labels?.[this.#o.names.secretTypes.legacyTokenInvalidSinceLabel];
      await this.#markUsed(s, secret, options.lookups);
      if (invalidSince !== undefined) {
        options.onLegacyUse?.({ ...use, invalidated: true });
        return refused(
          `the token of Secret ${s.namespace}/${s.secretName} has been invalid since ${invalidSince}: use tokens from the TokenRequest API or manually created secret-based tokens, or remove the Secret's ${this.#o.names.secretTypes.legacyTokenInvalidSinceLabel} label to allow this token for now`,
        );
      }
      options.onLegacyUse?.(use);
    } catch (err) {
      this.#logger.warn({ err, namespace: s.namespace, secret: s.secretName }, "cannot look up the objects a token Secret's token names");
      return refused(`cannot check the token's objects: ${(err as Error).message}`);
    }
    const groups = addGroups(serviceAccountGroups(s.namespace), SYSTEM_AUTHENTICATED);
    return { authenticated: true, user: { username, uid: s.serviceAccountUid, groups }, audiences: [...audiences] };
  }

  /**
   * As upstream, the day a token Secret's token last authenticated is its label (UTC, written at most once a day:
   * a label of today, or of tomorrow from a clock ahead, is left), so unused long-lived tokens can be found. A failed
   * write is logged; the token still authenticates.
   */
  async #markUsed(s: LegacyTokenSubject, secret: FoundObject, lookups: TokenLookups): Promise<void> {
    const label = this.#o.names.secretTypes.legacyTokenLastUsedLabel;
    const now = this.#o.clock.now();
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const last = secret.labels?.[label];
    if (last === day(now) || last === day(now + 86_400_000) || !lookups.labelSecret || !secret.uid) return;
    await lookups.labelSecret(s.namespace, s.secretName, secret.uid, label, day(now)).catch((err: unknown) => {
      this.#logger.warn({ err, namespace: s.namespace, secret: s.secretName }, "cannot label a token Secret with its last use");
    });
  }

  async #checkObjects(ns: string, name: string, uid: string, claim: PrivateClaim, lookups: TokenLookups | undefined): Promise<string | undefined> {
    if (typeof lookups?.serviceAccount !== "function") return "cannot check the token: no ServiceAccount lookup is configured";
    const sa = await lookups.serviceAccount(ns, name);
    if (!sa) return `the ServiceAccount ${ns}/${name} has been deleted`;
    if (sa.uid !== uid) return `the ServiceAccount UID (${sa.uid ?? ""}) does not match the token's (${uid})`;
    for (const [kind, bound, lookup] of [["Pod", claim.pod, lookups.pod], ["Secret", claim.secret, lookups.secret]] as const) {
      if (bound === undefined) continue;
      if (!nonEmpty(bound.name) || !nonEmpty(bound.uid)) return `the token's bound ${kind} claim is malformed`;
      if (typeof lookup !== "function") return `cannot check the token: no ${kind} lookup is configured`;
      const obj = await lookup(ns, bound.name);
      if (!obj) return `the bound ${kind} ${ns}/${bound.name} has been deleted`;
      if (obj.uid !== bound.uid) return `the bound ${kind} ${ns}/${bound.name} UID (${obj.uid ?? ""}) does not match the token's (${bound.uid})`;
    }
    return undefined;
  }

  #user(ns: string, name: string, uid: string, claim: PrivateClaim, jti: string | undefined): UserInfo {
    const prefix = this.#o.names.userExtraPrefix;
    const extra: Record<string, string[]> = {};
    if (claim.pod) {
      extra[`${prefix}/pod-name`] = [String(claim.pod.name)];
      extra[`${prefix}/pod-uid`] = [String(claim.pod.uid)];
    }
    if (nonEmpty(jti)) extra[`${prefix}/credential-id`] = [`JTI=${jti}`];
    const groups = addGroups(serviceAccountGroups(ns), SYSTEM_AUTHENTICATED);
    return { username: serviceAccountUsername(ns, name), uid, groups, ...(Object.keys(extra).length > 0 && { extra }) };
  }

  #signingKey(): SigningKey {
    if (!this.#key) throw new PlatformError("NOT_READY", "ServiceAccount tokens are not ready: start() has not loaded the signing key");
    return this.#key;
  }
}

function verifyFailure(err: unknown): string {
  const code = (err as { code?: string }).code;
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return "the token has expired";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "the token's signature algorithm is not accepted (ES256 only)";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "the token's signature is invalid";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return `the token's claims are invalid: ${(err as Error).message}`;
    default:
      return "the token is malformed";
  }
}

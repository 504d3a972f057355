// The request pipeline hooks: who is asking (authentication), may they (authorization), and admission of writes.
import type { IncomingHttpHeaders } from "node:http";
import type { TLSSocket } from "node:tls";
import type { ApiObject, UserInfo } from "../api/meta.js";
import type { Logger } from "../logger.js";
import type { AuthorizationAttributes } from "./auth/authorizer.js";
import type { AuthenticatedBy, LegacyTokenUse } from "./auth/identity.js";
import type { Deadline } from "./webhook/deadline.js";

/** What authentication sees of a request. */
export interface RequestCredentials {
  readonly headers: IncomingHttpHeaders;
  /** Every header as a list (`req.headersDistinct`), so repeated Impersonate-Group values arrive intact. */
  readonly headersDistinct?: Readonly<Record<string, string[] | undefined>>;
  /** The TLS socket when served over HTTPS (its client certificate chain: peerCertificateChain). */
  readonly tlsSocket?: TLSSocket;
  readonly remoteAddress?: string;
  /** The request path without its query (anonymous access may be limited to some paths). */
  readonly path?: string;
}

/**
 * What a write's admission may do to the request it serves, handed from the HTTP layer through the registry to the
 * admission plugins: each absent where there is no such request (a write made in the process).
 */
export interface RequestHooks {
  /**
   * Adds an annotation to the request's audit event, as upstream's AddAnnotation: keys are
   * `<plugin>.admission.<suffix>/<name>`. Absent when the request is not audited.
   */
  readonly annotate?: (key: string, value: string) => void;
  /** Adds a warning to the response (a Warning header). */
  readonly warn?: (text: string) => void;
  /** The request's deadline: admission webhooks stop waiting when it aborts (then their failurePolicy applies). */
  readonly deadline?: Deadline;
  /** Counts an admission webhook's round trip, which `apiserver_request_sli_duration_seconds` leaves out (as upstream). */
  readonly webhookTime?: (seconds: number) => void;
}

/** The hooks of `o` that are set, for passing on (an object spread would copy the rest of `o` too). */
export function requestHooks(o: RequestHooks): RequestHooks {
  // Assignments, not conditional spreads: each write passes its hooks twice, and a spread makes an object per hook.
  const hooks: { -readonly [K in keyof RequestHooks]: RequestHooks[K] } = {};
  if (o.annotate !== undefined) hooks.annotate = o.annotate;
  if (o.warn !== undefined) hooks.warn = o.warn;
  if (o.deadline !== undefined) hooks.deadline = o.deadline;
  if (o.webhookTime !== undefined) hooks.webhookTime = o.webhookTime;
  return hooks;
}

/** What authorization and admission decide on, as upstream's request attributes: authorization's, and more. */
export interface RequestAttributes extends AuthorizationAttributes, RequestHooks {
  readonly path: string;
  /** Kind of the object written (admission only). */
  readonly kind?: string;
  readonly dryRun?: boolean;
}

export interface AuthorizationDecision {
  readonly allowed: boolean;
  readonly reason?: string;
  /** The authorizer of an AuthorizationConfiguration chain that decided. */
  readonly authorizer?: string;
}

export interface Pipeline {
  /** The requesting user, or undefined when the request carries no acceptable credentials (answered 401). */
  authenticate(request: RequestCredentials): Promise<UserInfo | undefined>;
  authorize(attributes: RequestAttributes): Promise<AuthorizationDecision>;
  /**
   * Mutating then validating admission of a create, update or delete. May change `obj`; throws a PlatformError
   * (FORBIDDEN, INVALID) to refuse. `old` is the stored object for updates and deletes.
   */
  /** Undefined when every admission plugin answered at once; a refusal is thrown or the promise rejects. */
  admit(attributes: RequestAttributes, obj: ApiObject | undefined, old: ApiObject | undefined): void | Promise<void>;
  /** Checks /readyz adds for identity (e.g. external token issuers whose keys are not fetched yet). */
  readinessChecks?(): readonly ReadinessCheck[];
}

/** One named readiness check: resolves when it passes, rejects with the reason. */
export interface ReadinessCheck {
  readonly name: string;
  run(): Promise<void>;
}

/** The identity every request gets on a loopback development server without authentication. */
export const LOCAL_ADMIN: UserInfo = Object.freeze({
  username: "local-admin",
  uid: "local-admin",
  groups: ["system:masters", "system:authenticated"],
});

/**
 * Treats every request as LOCAL_ADMIN and allows everything: only for a loopback server started with
 * `--insecure-local`. Says so loudly once, at creation.
 */
export function insecureLocalPipeline(logger: Logger): Pipeline {
  logger.warn("authentication and authorization are OFF: every request is treated as a local administrator (insecure-local)");
  return {
    authenticate: async () => LOCAL_ADMIN,
    authorize: async () => ({ allowed: true }),
    admit: async () => undefined,
  };
}

/** Who actually sent a request that runs as an impersonated user (the audit log records both). */
const impersonators = new WeakMap<UserInfo, UserInfo>();

export function recordImpersonator(user: UserInfo, by: UserInfo): void {
  impersonators.set(user, by);
}

export function impersonatorOf(user: UserInfo): UserInfo | undefined {
  return impersonators.get(user);
}

/** Which authenticator accepted a user's credentials (and the JWT issuer), for audit annotations. */
const authenticators = new WeakMap<UserInfo, AuthenticatedBy>();

export function recordAuthenticator(user: UserInfo, by: AuthenticatedBy): void {
  authenticators.set(user, by);
}

export function authenticatorOf(user: UserInfo): AuthenticatedBy | undefined {
  return authenticators.get(user);
}

/** Upstream's warning to a client authenticating with an auto-generated token Secret's token. */
export const AUTO_GENERATED_TOKEN_WARNING = "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.";

/** The Warning texts a request's credentials earn, to start its response's list with. */
export function authenticationWarnings(user: UserInfo): string[] {
  return authenticators.get(user)?.legacyToken?.autoGenerated ? [AUTO_GENERATED_TOKEN_WARNING] : [];
}

/** Who sent a request refused after authentication (an impersonation not allowed), for its audit event. */
const requesters = new WeakMap<object, UserInfo>();

export function recordRequester(err: unknown, requester: UserInfo): unknown {
  if (typeof err === "object" && err !== null) requesters.set(err, requester);
  return err;
}

export function requesterOf(err: unknown): UserInfo | undefined {
  return typeof err === "object" && err !== null ? requesters.get(err) : undefined;
}

/** The token Secret's token labelled invalid that a 401 refused, for upstream's audit annotation on that refusal. */
const refusedLegacyTokens = new WeakMap<object, LegacyTokenUse>();

export function recordRefusedLegacyToken(err: object, use: LegacyTokenUse | undefined): void {
  if (use) refusedLegacyTokens.set(err, use);
}

export function refusedLegacyTokenOf(err: unknown): LegacyTokenUse | undefined {
  return typeof err === "object" && err !== null ? refusedLegacyTokens.get(err) : undefined;
}

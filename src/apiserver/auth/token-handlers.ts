// Create handlers of the authentication group: serviceaccounts/token (TokenRequest), TokenReview and SelfSubjectReview.
import type { UserInfo } from "../../api/meta.js";
import type { BoundObjectReference, TokenRequestSpec, TokenReviewSpec, TokenReviewStatus } from "../../api/types/authentication.js";
import { AUTHENTICATION_VERSION, SELF_SUBJECT_REVIEW_KIND, TOKEN_REQUEST_KIND, TOKEN_REVIEW_KIND } from "../../api/types/authentication.js";
import { PlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { selfSubjectReviewDefinition } from "../registry/resources/self-subject-review.js";
import { tokenRequestStrategy } from "../registry/resources/token-request.js";
import { tokenReviewDefinition } from "../registry/resources/token-review.js";
import type { CreateHandler } from "../registry/strategy.js";
import { checkCreateBody } from "./create-body.js";
import type { BoundObject, ServiceAccountTokens, TokenLookups } from "./service-account-tokens.js";

export interface TokenHandlerOptions {
  readonly tokens: ServiceAccountTokens;
  readonly lookups: TokenLookups;
}

const notFound = (resource: string, name: string) => new PlatformError("NOT_FOUND", `${resource} "${name}" not found`, { details: { name, kind: resource } });

/** POST .../namespaces/{ns}/serviceaccounts/{name}/token: a token for the ServiceAccount, optionally bound to a Pod or Secret. */
export function createTokenRequestHandler(options: TokenHandlerOptions): CreateHandler {
  const { tokens, lookups } = options;
  return async (body, ctx) => {
    const apiVersion = `${ctx.names.authentication}/${AUTHENTICATION_VERSION}`;
    if (body.kind !== undefined && (body.kind !== TOKEN_REQUEST_KIND || body.apiVersion !== apiVersion)) {
      throw new PlatformError("BAD_REQUEST", `the body must be a ${TOKEN_REQUEST_KIND} (${apiVersion}), got ${String(body.apiVersion)} ${String(body.kind)}`);
    }
    const namespace = ctx.namespace ?? "";
    const name = ctx.name ?? "";
    const request = checkCreateBody(tokenRequestStrategy, { group: ctx.names.authentication, kind: TOKEN_REQUEST_KIND }, { ...body, metadata: { ...(body.metadata ?? {}), name } }, ctx);
    const spec = request.spec as TokenRequestSpec;
    const sa = await lookups.serviceAccount(namespace, name);
    if (!sa?.uid) throw notFound("serviceaccounts", name);
    const boundObject = spec.boundObjectRef ? await resolveBound(spec.boundObjectRef, namespace, name, lookups) : undefined;
    const audiences = spec.audiences?.length ? spec.audiences : tokens.apiAudiences;
    const issued = await tokens.issue({
      namespace,
      serviceAccount: { name, uid: sa.uid },
      audiences,
      expirationSeconds: spec.expirationSeconds,
      ...(boundObject && { boundObject }),
    });
    return {
      apiVersion,
      kind: TOKEN_REQUEST_KIND,
      metadata: { name, namespace, creationTimestamp: rfc3339(ctx.now) },
      spec: { ...spec, audiences: [...audiences] },
      status: { token: issued.token, expirationTimestamp: issued.expirationTimestamp },
    };
  };
}

async function resolveBound(ref: BoundObjectReference, namespace: string, saName: string, lookups: TokenLookups): Promise<BoundObject> {
  const kind = ref.kind!;
  const name = ref.name!;
  const lookup = kind === "Pod" ? lookups.pod : lookups.secret;
  if (!lookup) throw new PlatformError("BAD_REQUEST", `tokens cannot be bound to a ${kind} on this server`);
  const found = await lookup(namespace, name);
  if (!found?.uid) throw notFound(kind === "Pod" ? "pods" : "secrets", name);
  if (ref.uid && ref.uid !== found.uid) {
    throw new PlatformError("CONFLICT", `the UID in the bound object reference (${ref.uid}) does not match the UID in record (${found.uid}); the object might have been deleted and then recreated`);
  }
  if (kind === "Pod" && found.serviceAccountName !== undefined && found.serviceAccountName !== saName) {
    throw new PlatformError("BAD_REQUEST", `cannot bind a token for ServiceAccount "${saName}" to Pod "${name}", which runs as ServiceAccount "${found.serviceAccountName}"`);
  }
  return { kind, name, uid: found.uid, ...(ref.apiVersion && { apiVersion: ref.apiVersion }) };
}

export interface TokenReviewHandlerOptions {
  /** The review itself: the request authenticators and their cache (AuthenticatorChain.reviewToken). */
  readonly review: (token: string, audiences: readonly string[] | undefined) => Promise<TokenReviewStatus>;
}

/** POST tokenreviews: fills status from the token, as a request bearing it would be authenticated. */
export function createTokenReviewHandler(options: TokenReviewHandlerOptions): CreateHandler {
  return async (body, ctx) => {
    const review = checkCreateBody(tokenReviewDefinition(ctx.names).strategy, { group: ctx.names.authentication, kind: TOKEN_REVIEW_KIND }, body, ctx);
    const spec = review.spec as TokenReviewSpec;
    const status = await options.review(spec.token ?? "", spec.audiences);
    return { ...review, metadata: { ...review.metadata, creationTimestamp: rfc3339(ctx.now) }, status };
  };
}

/** POST selfsubjectreviews: who the server takes the caller for (the impersonated user when impersonating). */
export function createSelfSubjectReviewHandler(): CreateHandler {
  return async (body, ctx) => {
    if (!ctx.user) throw new PlatformError("UNAUTHORIZED", "the request carries no user to review");
    const review = checkCreateBody(selfSubjectReviewDefinition(ctx.names).strategy, { group: ctx.names.authentication, kind: SELF_SUBJECT_REVIEW_KIND }, body, ctx);
    return { ...review, metadata: { ...review.metadata, creationTimestamp: rfc3339(ctx.now) }, status: { userInfo: userInfoOf(ctx.user) } };
  };
}

/** A copy of `user` with extra keys in lower case, as the seed asks of SelfSubjectReview. */
function userInfoOf(user: UserInfo): UserInfo {
  const extra = user.extra && Object.keys(user.extra).length > 0
    ? Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k.toLowerCase(), [...v]]))
    : undefined;
  return { username: user.username, ...(user.uid && { uid: user.uid }), groups: [...(user.groups ?? [])], ...(extra && { extra }) };
}

// TokenRequest, TokenReview and SelfSubjectReview handlers: bodies, bound objects, audiences and refusals.
import { decodeJwt } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { parseCredentialFile, TokenFileAuthenticator } from "../../../src/apiserver/auth/authn-token-file.js";
import { AuthenticatorChain } from "../../../src/apiserver/auth/authn-chain.js";
import { ServiceAccountAuthenticator } from "../../../src/apiserver/auth/authn-service-account.js";
import { ServiceAccountTokens, type TokenLookups } from "../../../src/apiserver/auth/service-account-tokens.js";
import { createSelfSubjectReviewHandler, createTokenRequestHandler, createTokenReviewHandler } from "../../../src/apiserver/auth/token-handlers.js";
import { PlatformError } from "../../../src/errors.js";
import { names, T0, user } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ISSUER = "https://platform-ca.test";
const tokens = new ServiceAccountTokens({ dataDir: tempDir(), issuer: ISSUER, names, clock: { now: () => T0 } });
const lookups: TokenLookups = {
  serviceAccount: (ns, name) => (ns === "team" && name === "builder" ? { uid: "sa-uid" } : undefined),
  pod: (ns, name) => (name === "web-0" ? { uid: "pod-uid", serviceAccountName: "builder" } : name === "db-0" ? { uid: "db-uid", serviceAccountName: "db" } : undefined),
};
const tokenFile = new TokenFileAuthenticator(parseCredentialFile("static-token,admin,uid-admin,system:masters\n"));
const ctx = (o: { namespace?: string; name?: string; user?: ReturnType<typeof user> | null } = {}) => ({
  now: new Date(T0),
  names,
  ...(o.user !== null && { user: o.user ?? user() }),
  namespace: o.namespace ?? "team",
  name: o.name ?? "builder",
});
const AUTHN_VERSION = `${names.authentication}/v1`;
const tokenRequest = (spec: Record<string, unknown> = {}): ApiObject => ({ apiVersion: AUTHN_VERSION, kind: "TokenRequest", metadata: {}, spec });
const tokenReview = (spec: Record<string, unknown>): ApiObject => ({ apiVersion: AUTHN_VERSION, kind: "TokenReview", metadata: {}, spec });

async function failure(p: Promise<unknown>): Promise<PlatformError> {
  const err = await p.catch((e: unknown) => e);
  if (err instanceof PlatformError) return err;
  throw new Error(`expected a PlatformError, got ${String(err)}`);
}

beforeAll(() => tokens.start());

describe("createTokenRequestHandler", () => {
  const handler = createTokenRequestHandler({ tokens, lookups });

  it("issues a token for the API server's audience by default", async () => {
    const out = await handler(tokenRequest(), ctx());
    expect(out).toMatchObject({
      apiVersion: AUTHN_VERSION,
      kind: "TokenRequest",
      metadata: { name: "builder", namespace: "team", creationTimestamp: "2030-01-01T00:00:00Z" },
      spec: { audiences: [ISSUER], expirationSeconds: 3600 },
      status: { expirationTimestamp: "2030-01-01T01:00:00Z" },
    });
    const token = (out.status as { token: string }).token;
    expect(decodeJwt(token)).toMatchObject({ sub: "system:serviceaccount:team:builder", aud: [ISSUER] });
    expect(await tokens.review(token, { lookups })).toHaveProperty("authenticated", true);
  });

  it("binds a token to a Pod of the same ServiceAccount", async () => {
    const out = await handler(tokenRequest({ audiences: ["vault"], boundObjectRef: { kind: "Pod", apiVersion: "v1", name: "web-0", uid: "pod-uid" } }), ctx());
    expect(decodeJwt((out.status as { token: string }).token)).toMatchObject({ "platform.io": { pod: { name: "web-0", uid: "pod-uid" } } });
  });

  it.each([
    ["a missing ServiceAccount", tokenRequest(), { name: "ghost" }, "NOT_FOUND", 'serviceaccounts "ghost" not found'],
    ["a lifetime below ten minutes", tokenRequest({ expirationSeconds: 300 }), {}, "INVALID", /spec.expirationSeconds: .*less than 10 minutes/],
    ["a bound object of another kind", tokenRequest({ boundObjectRef: { kind: "Node", name: "n" } }), {}, "INVALID", /spec.boundObjectRef.kind/],
    ["a missing bound Pod", tokenRequest({ boundObjectRef: { kind: "Pod", name: "gone" } }), {}, "NOT_FOUND", 'pods "gone" not found'],
    ["a bound Pod whose uid changed", tokenRequest({ boundObjectRef: { kind: "Pod", name: "web-0", uid: "old-uid" } }), {}, "CONFLICT", /does not match the UID in record/],
    ["a bound Pod of another ServiceAccount", tokenRequest({ boundObjectRef: { kind: "Pod", name: "db-0" } }), {}, "BAD_REQUEST", /runs as ServiceAccount "db"/],
    ["a Secret binding with no Secret lookup", tokenRequest({ boundObjectRef: { kind: "Secret", name: "s" } }), {}, "BAD_REQUEST", /cannot be bound to a Secret/],
    ["a body of another kind", { ...tokenRequest(), kind: "TokenReview" }, {}, "BAD_REQUEST", /must be a TokenRequest/],
  ])("refuses %s", async (_name, body, where, code, message) => {
    const err = await failure(handler(body, ctx(where)));
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
  });
});

describe("createTokenReviewHandler", () => {
  const chain = new AuthenticatorChain({ tokenFile, serviceAccount: new ServiceAccountAuthenticator({ tokens, lookups }) });
  const handler = createTokenReviewHandler({ review: (token, audiences) => chain.reviewToken(token, audiences) });
  let saToken = "";
  beforeAll(async () => {
    saToken = (await tokens.issue({ namespace: "team", serviceAccount: { name: "builder", uid: "sa-uid" }, audiences: ["vault"] })).token;
  });

  it("reviews a ServiceAccount token for its audience", async () => {
    const out = await handler(tokenReview({ token: saToken, audiences: ["vault"] }), ctx());
    expect(out.status).toMatchObject({ authenticated: true, audiences: ["vault"], user: { username: "system:serviceaccount:team:builder", uid: "sa-uid" } });
  });

  it.each([
    ["a ServiceAccount token for another audience", () => saToken, ["db"], false],
    ["a static token for the API server", () => "static-token", undefined, true],
    ["a static token for another audience", () => "static-token", ["vault"], false],
    ["an unknown token", () => "nope", undefined, false],
  ])("answers %s", async (_name, token, audiences, authenticated) => {
    const out = await handler(tokenReview({ token: token(), ...(audiences && { audiences }) }), ctx());
    const status = out.status as { authenticated: boolean; error?: string; audiences?: string[] };
    expect(status.authenticated).toBe(authenticated);
    if (authenticated) expect(status.audiences).toEqual([ISSUER]);
    else expect(status.error).toEqual(expect.any(String));
  });

  it("refuses a review without a token as INVALID", async () => {
    expect((await failure(handler(tokenReview({}), ctx()))).code).toBe("INVALID");
  });
});

describe("createSelfSubjectReviewHandler", () => {
  const handler = createSelfSubjectReviewHandler();
  const body = (): ApiObject => ({ apiVersion: AUTHN_VERSION, kind: "SelfSubjectReview", metadata: {}, status: { userInfo: { username: "claimed" } } });

  it("answers with the request's user, extra keys in lower case, whatever the body claims", async () => {
    const who = user({ username: "jane", uid: "u-1", groups: ["devs"], extra: { "Example.com/Scopes": ["a"] } });
    const out = await handler(body(), ctx({ user: who }));
    expect(out.status).toEqual({ userInfo: { username: "jane", uid: "u-1", groups: ["devs"], extra: { "example.com/scopes": ["a"] } } });
  });

  it("refuses a request without a user", async () => {
    expect((await failure(handler(body(), ctx({ user: null })))).code).toBe("UNAUTHORIZED");
  });
});

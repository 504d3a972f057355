// The authentication order over real authenticators: certificate, token file, ServiceAccount JWT, basic auth, anonymous.
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { AuthenticatorChain, type AuthenticatorChainOptions, type AuthnRequest } from "../../../src/apiserver/auth/authn-chain.js";
import { ServiceAccountAuthenticator } from "../../../src/apiserver/auth/authn-service-account.js";
import { BasicAuthFileAuthenticator, parseCredentialFile, TokenFileAuthenticator } from "../../../src/apiserver/auth/authn-token-file.js";
import { X509Authenticator } from "../../../src/apiserver/auth/authn-x509.js";
import { ServiceAccountTokens } from "../../../src/apiserver/auth/service-account-tokens.js";
import { TOKEN_SUCCESS_CACHE_TTL_MS } from "../../../src/apiserver/auth/token-cache.js";
import type { UserInfo } from "../../../src/api/meta.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { decodeJwt } from "jose";
import { issueCert, names, T0, CLIENT_CA } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ISSUER = "https://platform-ca.test";
const clock = { now: () => T0 + 60_000 };
const tokens = new ServiceAccountTokens({ dataDir: tempDir(), issuer: ISSUER, names, clock });
const accounts = new Map([["team/builder", "sa-uid-1"]]);
const serviceAccount = new ServiceAccountAuthenticator({
  tokens,
  lookups: { serviceAccount: (ns, name) => (accounts.has(`${ns}/${name}`) ? { uid: accounts.get(`${ns}/${name}`) } : undefined) },
});
const tokenFile = new TokenFileAuthenticator(parseCredentialFile('admin-token,admin,uid-admin,"system:masters"\n'));
const basicAuth = new BasicAuthFileAuthenticator(parseCredentialFile("pw,basil,uid-basil\n", "basic-auth file", "password"));
let x509: X509Authenticator;
let saToken: string;
let goodCert: Uint8Array;
let expiredCert: Uint8Array;

beforeAll(async () => {
  await tokens.start();
  saToken = (await tokens.issue({ namespace: "team", serviceAccount: { name: "builder", uid: "sa-uid-1" }, audiences: [ISSUER] })).token;
  x509 = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock });
  goodCert = (await issueCert({ cn: "carol", o: ["devs"] })).der;
  expiredCert = (await issueCert({ cn: "carol", to: 1 })).der;
});

function chain(o: Partial<AuthenticatorChainOptions> = {}) {
  return new AuthenticatorChain({ x509, tokenFile, serviceAccount, ...o });
}

const req = (o: { authorization?: string | string[]; certs?: Uint8Array[] } = {}): AuthnRequest => ({
  headers: o.authorization === undefined ? {} : { authorization: o.authorization as string },
  peerCertificates: o.certs ?? [],
});
const basic = (text: string) => `Basic ${Buffer.from(text).toString("base64")}`;

describe("AuthenticatorChain", () => {
  it.each([
    ["a client certificate", () => req({ certs: [goodCert] }), "carol", ["devs", "system:authenticated"], "x509"],
    ["a token from the token file", () => req({ authorization: "Bearer admin-token" }), "admin", ["system:masters", "system:authenticated"], "token-file"],
    ["a ServiceAccount token", () => req({ authorization: `Bearer ${saToken}` }), "system:serviceaccount:team:builder", ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"], "service-account"],
    ["a lower-case scheme and extra spaces", () => req({ authorization: "bearer   admin-token  " }), "admin", ["system:masters", "system:authenticated"], "token-file"],
    ["a good token beside an expired certificate", () => req({ certs: [expiredCert], authorization: "Bearer admin-token" }), "admin", ["system:masters", "system:authenticated"], "token-file"],
    ["a certificate before a token of another user", () => req({ certs: [goodCert], authorization: "Bearer admin-token" }), "carol", ["devs", "system:authenticated"], "x509"],
  ])("authenticates %s", async (_name, make, username, groups, authenticator) => {
    const r = await chain().authenticate(make());
    expect(r).toEqual({ user: expect.objectContaining({ username, groups }), authenticator: { authenticator } });
  });

  it.each([
    ["a client certificate", () => req({ certs: [goodCert] })],
    ["a token from the token file", () => req({ authorization: "Bearer admin-token" })],
    ["basic credentials", () => req({ authorization: basic("basil:pw") })],
  ])("hands every request with %s one frozen user object, which no caller can change", async (_name, make) => {
    const c = chain({ basicAuth });
    const [a, b] = [await c.authenticate(make()), await c.authenticate(make())] as { user: { groups: string[] } }[];
    expect(a!.user).toBe(b!.user);
    expect(a!.user.groups).toContain("system:authenticated");
    expect(Object.isFrozen(a!.user) && Object.isFrozen(a!.user.groups)).toBe(true);
    expect(() => a!.user.groups.push("system:masters")).toThrow(TypeError);
  });

  /** A chain on `fake` whose ServiceAccount authenticator counts its lookups of the account. */
  function countingChain(fake: FakeClock) {
    const counted = { lookups: 0 };
    const lookups = { serviceAccount: (ns: string, name: string) => (counted.lookups++, accounts.has(`${ns}/${name}`) ? { uid: accounts.get(`${ns}/${name}`) } : undefined) };
    const c = chain({ serviceAccount: new ServiceAccountAuthenticator({ tokens, lookups }), clock: fake });
    const authenticate = () => c.authenticate(req({ authorization: `Bearer ${saToken}` }));
    return { counted, c, authenticate, userOf: async () => ((await authenticate()) as { user: UserInfo }).user };
  }

  it("hands every request of a ServiceAccount token one frozen user for 10 s without checking it again, as upstream's token cache", async () => {
    const fake = new FakeClock(T0 + 60_000);
    const { counted, authenticate, userOf } = countingChain(fake);
    const first = await userOf();
    expect(first).toMatchObject({ username: "system:serviceaccount:team:builder", groups: ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"] });
    expect(await userOf()).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first.groups)).toBe(true);
    expect(counted.lookups).toBe(1);
    accounts.delete("team/builder");
    try {
      // Gone, yet still authenticated until 10 s have passed since the check (upstream's TokenSuccessCacheTTL).
      await fake.advance(TOKEN_SUCCESS_CACHE_TTL_MS);
      expect(await userOf()).toBe(first);
      await fake.advance(1);
      expect(await authenticate()).toEqual({ error: "invalid ServiceAccount token: the ServiceAccount team/builder has been deleted" });
      // Refusals are not remembered.
      expect(await authenticate()).toMatchObject({ error: expect.stringMatching(/has been deleted/) });
      expect(counted.lookups).toBe(3);
    } finally {
      accounts.set("team/builder", "sa-uid-1");
    }
  });

  it("reviews a token (TokenReview) through the requests' cache, and one for named audiences under its own entry", async () => {
    const fake = new FakeClock(T0 + 60_000);
    const { counted, c, authenticate } = countingChain(fake);
    const review = (audiences?: string[]) => c.reviewToken(saToken, audiences);
    expect(await review()).toEqual({ authenticated: true, user: expect.objectContaining({ username: "system:serviceaccount:team:builder", groups: expect.arrayContaining(["system:authenticated"]) }), audiences: [ISSUER] });
    expect(await review([])).toMatchObject({ authenticated: true });
    await authenticate();
    // One check for the review without audiences, the one with none named and the request: one entry.
    expect(counted.lookups).toBe(1);
    expect(await review([ISSUER])).toMatchObject({ authenticated: true, audiences: [ISSUER] });
    expect(await review([ISSUER])).toMatchObject({ authenticated: true, audiences: [ISSUER] });
    expect(counted.lookups).toBe(2);
    // A refusal for another audience is not remembered, nor does it take the place of the success.
    expect(await review(["vault"])).toEqual({ authenticated: false, error: expect.stringMatching(/do not include any of \["vault"\]/) });
    expect(await review(["vault"])).toMatchObject({ authenticated: false });
    expect(counted.lookups).toBe(2);
    // A change to the ServiceAccount forgets both entries.
    c.objectChanged("serviceaccounts/team/builder");
    await review();
    await review([ISSUER]);
    expect(counted.lookups).toBe(4);
  });

  it("answers a review without audiences with those of the API server's that the ServiceAccount token holds", async () => {
    const apiServer = new ServiceAccountTokens({ dataDir: tempDir(), issuer: ISSUER, names, clock, apiAudiences: [ISSUER, "https://other.test"] });
    await apiServer.start();
    const token = (await apiServer.issue({ namespace: "team", serviceAccount: { name: "builder", uid: "sa-uid-1" }, audiences: ["https://other.test"] })).token;
    const c = chain({ serviceAccount: new ServiceAccountAuthenticator({ tokens: apiServer, lookups: { serviceAccount: () => ({ uid: "sa-uid-1" }) } }) });
    expect(await c.reviewToken(token)).toMatchObject({ authenticated: true, audiences: ["https://other.test"] });
    expect(await c.reviewToken("admin-token")).toMatchObject({ authenticated: true, audiences: [ISSUER, "https://other.test"] });
  });

  it.each([
    ["no audiences", undefined, { authenticated: true, audiences: [ISSUER] }],
    ["the API server's audience", [ISSUER, "vault"], { authenticated: true, audiences: [ISSUER] }],
    ["another audience only", ["vault"], { authenticated: false, error: "the token is not valid for the requested audiences" }],
  ])("reviews a token of the token file, which knows no audiences, for %s", async (_name, audiences, expected) => {
    expect(await chain().reviewToken("admin-token", audiences)).toMatchObject(expected);
  });

  it("answers a review of an unknown or empty token as not authenticated", async () => {
    expect(await chain().reviewToken("nope")).toEqual({ authenticated: false, error: "invalid bearer token" });
    expect(await chain().reviewToken("")).toEqual({ authenticated: false, error: "the bearer token is empty" });
  });

  it("never keeps a ServiceAccount token past its exp", async () => {
    const exp = decodeJwt(saToken).exp! * 1000;
    const fake = new FakeClock(exp - 4_000);
    const { counted, userOf } = countingChain(fake);
    await userOf();
    await fake.advance(3_999);
    await userOf();
    expect(counted.lookups).toBe(1);
    // At its exp the token is checked again (here the authenticator's own clock still takes it; its expiry is its own test).
    await fake.advance(1);
    await userOf();
    expect(counted.lookups).toBe(2);
  });

  it.each([
    ["no credentials", () => req(), /no credentials were presented/],
    ["an unknown bearer token", () => req({ authorization: "Bearer nope" }), /^invalid bearer token$/],
    ["an empty bearer token", () => req({ authorization: "Bearer " }), /the bearer token is empty/],
    ["basic credentials without a basic-auth file", () => req({ authorization: basic("basil:pw") }), /^basic authentication is not supported$/],
    ["another scheme", () => req({ authorization: "Digest abc" }), /scheme "Digest" is not supported/],
    ["an expired certificate alone", () => req({ certs: [expiredCert] }), /has expired/],
    ["a repeated Authorization header", () => req({ authorization: ["Bearer a", "Bearer b"] }), /must be given once/],
    ["a huge Authorization header", () => req({ authorization: `Bearer ${"x".repeat(40_000)}` }), /above 32768 bytes/],
  ])("refuses %s", async (_name, make, error) => {
    expect(await chain().authenticate(make())).toEqual({ error: expect.stringMatching(error) });
  });

  it("refuses a ServiceAccount token once the account is gone", async () => {
    accounts.delete("team/builder");
    try {
      expect(await chain().authenticate(req({ authorization: `Bearer ${saToken}` }))).toEqual({ error: "invalid ServiceAccount token: the ServiceAccount team/builder has been deleted" });
    } finally {
      accounts.set("team/builder", "sa-uid-1");
    }
  });

  it.each([
    ["the right password", basic("basil:pw"), { user: { username: "basil", uid: "uid-basil", groups: ["system:authenticated"] }, authenticator: { authenticator: "basic-auth" } }],
    ["a wrong password", basic("basil:no"), { error: "invalid username or password" }],
    ["a value that is not base64", "Basic !!!", { error: "malformed basic credentials (expected base64 of user:password)" }],
    ["no colon", basic("basil"), { error: "malformed basic credentials (expected base64 of user:password)" }],
  ])("with a basic-auth file, answers %s", async (_name, authorization, expected) => {
    expect(await chain({ basicAuth }).authenticate(req({ authorization }))).toEqual(expected);
  });

  it("makes a request without credentials anonymous only when enabled", async () => {
    expect(await chain({ anonymous: true }).authenticate(req())).toEqual({ user: { username: "system:anonymous", groups: ["system:unauthenticated"] }, authenticator: { authenticator: "anonymous" } });
    expect(await chain({ anonymous: true }).authenticate(req({ authorization: "Bearer nope" }))).toEqual({ error: "invalid bearer token" });
  });

  it("never throws on arbitrary headers and certificate bytes", async () => {
    const c = chain({ basicAuth, anonymous: false });
    const header = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ maxLength: 100 }).map((s) => `Bearer ${s}`),
      fc.string({ maxLength: 100 }).map((s) => `Basic ${s}`),
      fc.string({ maxLength: 60 }).map((s) => basic(s)),
    );
    await fc.assert(
      fc.asyncProperty(fc.option(header, { nil: undefined }), fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 3 }), async (authorization, certs) => {
        const r = await c.authenticate(req({ ...(authorization !== undefined && { authorization }), certs }));
        expect("user" in r || typeof (r as { error: string }).error === "string").toBe(true);
        if ("user" in r) expect(["admin", "basil"]).toContain(r.user.username);
      }),
      { numRuns: 300 },
    );
  });
});

describe("ServiceAccountAuthenticator", () => {
  it("leaves tokens that are not its own to other authenticators", async () => {
    expect(await serviceAccount.authenticateToken("admin-token")).toBeUndefined();
  });

  it("refuses a token meant for another audience than the API server", async () => {
    const { token } = await tokens.issue({ namespace: "team", serviceAccount: { name: "builder", uid: "sa-uid-1" }, audiences: ["vault"] });
    expect(await serviceAccount.authenticateToken(token)).toEqual({ error: expect.stringMatching(/do not include any of \["https:\/\/platform-ca.test"\]/) });
  });
});

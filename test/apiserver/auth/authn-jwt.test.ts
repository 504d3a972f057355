// JWT authentication against a real HTTPS test issuer: a table of token cases (algorithms, audiences, times, rules, mappings, keys).
import { Agent } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JwtAuthenticators } from "../../../src/apiserver/auth/authn-jwt.js";
import { parseAuthenticationConfig } from "../../../src/config/authentication-config.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { startTestOidcIssuer, TEST_ISSUER_ALGORITHMS, type MintOptions, type TestOidcIssuer } from "../../../src/testing/oidc-issuer.js";
import { stringify } from "yaml";

type Expect = { username: string; groups?: string[]; uid?: string; extra?: Record<string, string[]> } | RegExp | "not ours";
interface Case {
  readonly name: string;
  readonly config?: "basic" | "email" | "expr";
  readonly claims?: Record<string, unknown>;
  readonly mint?: MintOptions;
  /** Changes the minted token (tampering). */
  readonly edit?: (token: string) => string;
  readonly expect: Expect;
}

const now = () => Math.floor(Date.now() / 1000);
let issuer: TestOidcIssuer;
let other: TestOidcIssuer;
const auth: Record<string, JwtAuthenticators> = {};

function configFor(kind: string, i: TestOidcIssuer): string {
  const issuerBlock = { url: i.url, certificateAuthority: i.caPem, audiences: ["platform", "other"], audienceMatchPolicy: "MatchAny" };
  const mappings: Record<string, unknown> = {
    basic: { username: { claim: "sub", prefix: "oidc:" }, groups: { claim: "groups", prefix: "g:" } },
    email: { username: { claim: "email", prefix: "" } },
    expr: {
      username: { expression: "claims.?preferred_username.orValue(claims.sub).lowerAscii()" },
      groups: { expression: "claims.?roles.orValue([]).map(r, 'role:' + r)" },
      uid: { expression: "claims.?oid.orValue('')" },
      extra: [
        { key: "example.org/tenant", valueExpression: "claims.?tenant.orValue('')" },
        { key: "example.org/scopes", valueExpression: "claims.?scp.orValue('').split(' ')" },
      ],
    },
  };
  const doc: Record<string, unknown> = { issuer: issuerBlock, claimMappings: mappings[kind] };
  if (kind === "expr") {
    doc.claimValidationRules = [
      { claim: "hd", requiredValue: "example.com" },
      { expression: "claims.?level.orValue(0) < 5", message: "level too high" },
      // Whole JSON numbers are CEL ints, as upstream: int arithmetic on exp and iat works.
      { expression: "claims.exp - claims.iat <= 3600", message: "tokens live at most an hour" },
    ];
    doc.userValidationRules = [{ expression: "!user.username.startsWith('system:')", message: "no system: names" }];
  }
  return stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthenticationConfiguration", jwt: [doc] });
}

beforeAll(async () => {
  [issuer, other] = await Promise.all([startTestOidcIssuer({ path: "/tenant" }), startTestOidcIssuer()]);
  for (const kind of ["basic", "email", "expr"]) {
    auth[kind] = new JwtAuthenticators(parseAuthenticationConfig(configFor(kind, issuer), `${kind}.yaml`), { refetchIntervalMs: 0 });
    await auth[kind]!.start();
  }
}, 60_000);
afterAll(async () => {
  for (const a of Object.values(auth)) a.stop();
  await Promise.all([issuer?.close(), other?.close()]);
});

const ok = (username: string, more: Omit<Exclude<Expect, RegExp | string>, "username"> = {}): Expect => ({ username, groups: [], ...more });
const flip = (token: string): string => {
  const [h, p, s] = token.split(".");
  const payload = JSON.parse(Buffer.from(p!, "base64url").toString());
  payload.sub = "mallory";
  return [h, Buffer.from(JSON.stringify(payload)).toString("base64url"), s].join(".");
};
const unsigned = (claims: Record<string, unknown>) => () => `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.`;

const ASYMMETRIC = TEST_ISSUER_ALGORITHMS.filter((a) => a !== "HS256");
const CASES: Case[] = [
  // iss must equal the configured URL exactly; the list is built in beforeAll's issuer, so these use a marker.
  { name: "iss with a trailing slash", claims: { sub: "a", iss: "TRAILING" }, expect: "not ours" },
  // Every accepted algorithm: valid, expired, wrong audience, tampered payload.
  ...ASYMMETRIC.flatMap((alg): Case[] => [
    { name: `${alg} valid`, claims: { sub: "alice" }, mint: { alg }, expect: ok("oidc:alice") },
    { name: `${alg} expired`, claims: { sub: "alice", exp: now() - 5 }, mint: { alg }, expect: /token is expired/ },
    { name: `${alg} wrong audience`, claims: { sub: "alice", aud: "elsewhere" }, mint: { alg }, expect: /expected audience/ },
    { name: `${alg} tampered payload`, claims: { sub: "alice" }, mint: { alg }, edit: flip, expect: /failed to verify the signature/ },
  ]),
  { name: "HS256 refused", claims: { sub: "alice" }, mint: { alg: "HS256" }, expect: /algorithm "HS256" is not accepted/ },
  { name: "alg none refused", edit: () => unsigned({ iss: issuer.url, aud: "platform", sub: "alice", exp: now() + 60 })(), expect: /algorithm "none" is not accepted/ },
  // Audiences.
  { name: "aud string, first audience", claims: { sub: "a", aud: "platform" }, expect: ok("oidc:a") },
  { name: "aud string, second audience", claims: { sub: "a", aud: "other" }, expect: ok("oidc:a") },
  { name: "aud array with one match", claims: { sub: "a", aud: ["x", "other"] }, expect: ok("oidc:a") },
  { name: "aud array without match", claims: { sub: "a", aud: ["x", "y"] }, expect: /expected audience/ },
  { name: "aud empty array", claims: { sub: "a", aud: [] }, expect: /expected audience/ },
  { name: "aud missing", claims: { sub: "a", aud: undefined }, expect: /expected audience/ },
  { name: "aud differs by case", claims: { sub: "a", aud: "Platform" }, expect: /expected audience/ },
  // exp (no leeway), nbf (5 minutes of leeway), iat (not checked beyond its type).
  { name: "exp one minute ahead", claims: { sub: "a", exp: now() + 60 }, expect: ok("oidc:a") },
  { name: "exp one second ago", claims: { sub: "a", exp: now() - 1 }, expect: /token is expired/ },
  { name: "exp an hour ago", claims: { sub: "a", exp: now() - 3600 }, expect: /token is expired/ },
  { name: "exp missing", claims: { sub: "a", exp: undefined }, expect: /no numeric exp/ },
  { name: "exp a string", claims: { sub: "a", exp: String(now() + 60) }, expect: /no numeric exp/ },
  { name: "exp fractional, ahead", claims: { sub: "a", exp: now() + 60.5 }, expect: ok("oidc:a") },
  { name: "nbf in the past", claims: { sub: "a", nbf: now() - 60 }, expect: ok("oidc:a") },
  { name: "nbf a minute ahead (within leeway)", claims: { sub: "a", nbf: now() + 60 }, expect: ok("oidc:a") },
  { name: "nbf 4 minutes ahead (within leeway)", claims: { sub: "a", nbf: now() + 240 }, expect: ok("oidc:a") },
  { name: "nbf 10 minutes ahead", claims: { sub: "a", nbf: now() + 600 }, expect: /before the nbf/ },
  { name: "nbf a string", claims: { sub: "a", nbf: "soon" }, expect: /nbf claim is not a number/ },
  { name: "iat in the future is not checked", claims: { sub: "a", iat: now() + 3600 }, expect: ok("oidc:a") },
  { name: "iat missing", claims: { sub: "a", iat: undefined }, expect: ok("oidc:a") },
  { name: "iat a string", claims: { sub: "a", iat: "yesterday" }, expect: /iat claim is not a number/ },
  // Issuer.
  { name: "iss of an unconfigured issuer", claims: { sub: "a", iss: "https://unknown.example.com" }, expect: "not ours" },
  { name: "iss missing", claims: { sub: "a", iss: undefined }, expect: "not ours" },
  { name: "not a JWT", edit: () => "abc.def", expect: "not ours" },
  // Keys.
  { name: "unknown kid", claims: { sub: "a" }, mint: { kid: "never-published" }, expect: /no key of issuer/ },
  { name: "published kid, other key", claims: { sub: "a" }, mint: { unpublishedKey: true, kid: "rs256-1" }, expect: /failed to verify the signature|no key/ },
  { name: "unpublished key and kid", claims: { sub: "a" }, mint: { unpublishedKey: true }, expect: /no key of issuer/ },
  // Username claim with its prefix.
  ...["alice", "bob@example.com", "x", "ünïcödé", "with space"].map((sub): Case => ({ name: `username ${sub}`, claims: { sub }, expect: ok(`oidc:${sub}`) })),
  { name: "username claim missing", claims: { sub: undefined }, expect: /username claim "sub" is not present/ },
  { name: "username claim a number", claims: { sub: 42 }, expect: /username claim "sub" is not a string/ },
  { name: "username claim a list", claims: { sub: ["a"] }, expect: /not a string/ },
  { name: "username claim empty, prefixed", claims: { sub: "" }, expect: ok("oidc:") },
  // Groups claim with its prefix.
  { name: "groups list", claims: { sub: "a", groups: ["dev", "ops"] }, expect: ok("oidc:a", { groups: ["g:dev", "g:ops"] }) },
  { name: "groups single string", claims: { sub: "a", groups: "dev" }, expect: ok("oidc:a", { groups: ["g:dev"] }) },
  { name: "groups empty list", claims: { sub: "a", groups: [] }, expect: ok("oidc:a") },
  { name: "groups missing", claims: { sub: "a" }, expect: ok("oidc:a") },
  { name: "groups a number", claims: { sub: "a", groups: 3 }, expect: /groups claim "groups" is not a string or a list/ },
  { name: "groups mixed list", claims: { sub: "a", groups: ["dev", 3] }, expect: /is not a string or a list/ },
  { name: "groups keep system: names behind the prefix", claims: { sub: "a", groups: ["system:masters"] }, expect: ok("oidc:a", { groups: ["g:system:masters"] }) },
  // email as the username: email_verified must be true when present.
  { name: "email verified", config: "email", claims: { email: "a@example.com", email_verified: true }, expect: ok("a@example.com") },
  { name: "email without email_verified", config: "email", claims: { email: "a@example.com" }, expect: ok("a@example.com") },
  { name: "email not verified", config: "email", claims: { email: "a@example.com", email_verified: false }, expect: /email not verified/ },
  { name: "email_verified a string", config: "email", claims: { email: "a@example.com", email_verified: "true" }, expect: /email_verified claim is not a boolean/ },
  { name: "email missing", config: "email", claims: { sub: "a" }, expect: /username claim "email" is not present/ },
  { name: "email empty", config: "email", claims: { email: "" }, expect: /mapped username is empty/ },
  // Expressions: username, groups, uid, extra; claim and user validation rules.
  { name: "expr username from preferred_username", config: "expr", claims: { sub: "s", preferred_username: "Alice", hd: "example.com" }, expect: ok("alice") },
  { name: "expr username falls back to sub", config: "expr", claims: { sub: "S1", hd: "example.com" }, expect: ok("s1") },
  { name: "expr username empty", config: "expr", claims: { sub: "", hd: "example.com" }, expect: /mapped username is empty/ },
  { name: "expr username not a string", config: "expr", claims: { sub: 5, hd: "example.com" }, expect: /error evaluating username claim expression/ },
  { name: "expr groups from roles", config: "expr", claims: { sub: "a", hd: "example.com", roles: ["admin", "dev"] }, expect: ok("a", { groups: ["role:admin", "role:dev"] }) },
  { name: "expr groups absent", config: "expr", claims: { sub: "a", hd: "example.com" }, expect: ok("a") },
  { name: "expr uid", config: "expr", claims: { sub: "a", hd: "example.com", oid: "0000-1" }, expect: ok("a", { uid: "0000-1" }) },
  { name: "expr uid a number fails", config: "expr", claims: { sub: "a", hd: "example.com", oid: 7 }, expect: /error evaluating uid claim expression/ },
  { name: "expr extra tenant", config: "expr", claims: { sub: "a", hd: "example.com", tenant: "t1" }, expect: ok("a", { extra: { "example.org/tenant": ["t1"] } }) },
  { name: "expr extra scopes split", config: "expr", claims: { sub: "a", hd: "example.com", scp: "read write" }, expect: ok("a", { extra: { "example.org/scopes": ["read", "write"] } }) },
  { name: "expr extra empty values dropped", config: "expr", claims: { sub: "a", hd: "example.com", tenant: "", scp: "" }, expect: ok("a") },
  { name: "expr extra both keys", config: "expr", claims: { sub: "a", hd: "example.com", tenant: "t", scp: "x" }, expect: ok("a", { extra: { "example.org/tenant": ["t"], "example.org/scopes": ["x"] } }) },
  { name: "expr required claim missing", config: "expr", claims: { sub: "a" }, expect: /required claim "hd" is not present/ },
  { name: "expr required claim wrong", config: "expr", claims: { sub: "a", hd: "evil.com" }, expect: /required claim hd value does not match/ },
  { name: "expr required claim not a string", config: "expr", claims: { sub: "a", hd: 1 }, expect: /required claim "hd" is not a string/ },
  { name: "expr claim rule with message", config: "expr", claims: { sub: "a", hd: "example.com", level: 9 }, expect: /failed: level too high/ },
  { name: "expr claim rule holds", config: "expr", claims: { sub: "a", hd: "example.com", level: 1 }, expect: ok("a") },
  { name: "expr claim rule type error", config: "expr", claims: { sub: "a", hd: "example.com", level: "high" }, expect: /error evaluating claim validation expression/ },
  { name: "expr claim rule over a double", config: "expr", claims: { sub: "a", hd: "example.com", level: 4.5 }, expect: ok("a") },
  { name: "expr int arithmetic on exp and iat", config: "expr", claims: { sub: "a", hd: "example.com" }, mint: { lifetimeSeconds: 7200 }, expect: /failed: tokens live at most an hour/ },
  { name: "expr user rule refuses system:", config: "expr", claims: { sub: "system:admin", hd: "example.com" }, expect: /user validation rule .* failed: no system: names/ },
  { name: "expr user rule passes", config: "expr", claims: { sub: "systemd", hd: "example.com" }, expect: ok("systemd") },
];
// More expiry and audience checks across the configurations, so each mapping shape sees them.
for (const config of ["email", "expr"] as const) {
  const base = config === "email" ? { email: "e@example.com" } : { sub: "e", hd: "example.com" };
  const user = config === "email" ? "e@example.com" : "e";
  CASES.push(
    { name: `${config}: valid`, config, claims: base, expect: ok(user) },
    { name: `${config}: expired`, config, claims: { ...base, exp: now() - 2 }, expect: /token is expired/ },
    { name: `${config}: wrong audience`, config, claims: { ...base, aud: "nope" }, expect: /expected audience/ },
    { name: `${config}: nbf far ahead`, config, claims: { ...base, nbf: now() + 3600 }, expect: /before the nbf/ },
    { name: `${config}: ES384`, config, claims: base, mint: { alg: "ES384" }, expect: ok(user) },
    { name: `${config}: PS512`, config, claims: base, mint: { alg: "PS512" }, expect: ok(user) },
  );
}

describe("JWT authentication against a real HTTPS issuer", () => {
  it("has at least 100 token cases", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(100);
  });

  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const claims = c.claims?.iss === "TRAILING" ? { ...c.claims, iss: `${issuer.url}/` } : c.claims;
    const token = c.edit && !claims ? c.edit("") : await issuer.mint(claims ?? {}, c.mint ?? {});
    const result = await auth[c.config ?? "basic"]!.authenticateToken(c.edit && c.claims ? c.edit(token) : token);
    if (c.expect === "not ours") return expect(result).toBeUndefined();
    expect(result).toBeDefined();
    if (c.expect instanceof RegExp) {
      expect(result).toHaveProperty("error");
      expect((result as { error: string }).error).toMatch(c.expect);
      return;
    }
    expect(result, JSON.stringify(result)).toHaveProperty("user");
    expect((result as { user: unknown }).user).toEqual({ username: c.expect.username, groups: c.expect.groups ?? [], ...(c.expect.uid && { uid: c.expect.uid }), ...(c.expect.extra && { extra: c.expect.extra }) });
    expect(result!.issuer).toBe(issuer.url);
  });
});

describe("keys and discovery", () => {
  it("accepts tokens of rotated keys by refetching the JWKS on an unknown kid, and refuses the old keys", async () => {
    // A subject no other test uses: a token that authenticated in the last 10 s is remembered (see the cache test).
    const before = await issuer.mint({ sub: "before-rotation" });
    await issuer.rotateKeys();
    const after = await issuer.mint({ sub: "a" });
    expect(await auth.basic!.authenticateToken(after)).toMatchObject({ user: { username: "oidc:a" } });
    expect(await auth.basic!.authenticateToken(before)).toMatchObject({ error: expect.stringMatching(/no key of issuer/) });
  });

  it("remembers a token that authenticated for 10 s on the clock (as upstream's token cache), never past its exp", async () => {
    const clock = new FakeClock(Date.now());
    const cached = new JwtAuthenticators(parseAuthenticationConfig(configFor("basic", issuer), "cached.yaml"), { refetchIntervalMs: 0, clock });
    await cached.start();
    try {
      const token = await issuer.mint({ sub: "kept" });
      const shortLived = await issuer.mint({ sub: "brief" }, { lifetimeSeconds: 3 });
      const first = await cached.authenticateToken(token);
      expect(first).toMatchObject({ user: { username: "oidc:kept" }, issuer: issuer.url });
      expect(await cached.authenticateToken(shortLived)).toMatchObject({ user: { username: "oidc:brief" } });
      // The issuer's keys change and the authenticator learns the new set: a fresh check of these tokens would fail.
      await issuer.rotateKeys();
      expect(await cached.authenticateToken(await issuer.mint({ sub: "new" }))).toMatchObject({ user: { username: "oidc:new" } });
      const again = await cached.authenticateToken(token);
      expect(again).toMatchObject({ user: { username: "oidc:kept" } });
      expect(Object.isFrozen((again as { user: object }).user)).toBe(true);
      // Past the token's own exp (3 s) the entry is gone though 10 s have not passed.
      await clock.advance(3_500);
      expect(await cached.authenticateToken(shortLived)).toMatchObject({ error: expect.stringMatching(/no key of issuer|expired/) });
      expect(await cached.authenticateToken(token)).toMatchObject({ user: { username: "oidc:kept" } });
      await clock.advance(6_600);
      expect(await cached.authenticateToken(token)).toMatchObject({ error: expect.stringMatching(/no key of issuer/) });
    } finally {
      cached.stop();
    }
  });

  it("refetches on unknown kids at most once per interval", async () => {
    const limited = new JwtAuthenticators(parseAuthenticationConfig(configFor("basic", issuer), "limited.yaml"), { refetchIntervalMs: 60_000 });
    await limited.start();
    const fetched = issuer.fetches.jwks;
    for (let i = 0; i < 20; i++) await limited.authenticateToken(await issuer.mint({ sub: "a" }, { kid: `unknown-${i}` }));
    expect(issuer.fetches.jwks - fetched).toBe(0);
    limited.stop();
  });

  it("is not ready while discovery names another issuer, and says which issuer is not ready", async () => {
    other.setDiscovery({ issuer: "https://impostor.example.com" });
    const a = new JwtAuthenticators(parseAuthenticationConfig(configFor("basic", other), "mismatch.yaml"));
    void a.start();
    await expect.poll(() => a.notReady()[0]?.reason, { timeout: 5000 }).toMatch(/names issuer "https:\/\/impostor.example.com", expected/);
    expect(a.notReady().map((n) => n.issuer)).toEqual([other.url]);
    const token = await other.mint({ sub: "a" });
    expect(await a.authenticateToken(token)).toMatchObject({ error: expect.stringMatching(/are not fetched yet/) });
    other.setDiscovery(undefined);
    await expect.poll(() => a.notReady().length, { timeout: 10_000 }).toBe(0);
    expect(await a.authenticateToken(await other.mint({ sub: "a" }))).toMatchObject({ user: { username: "oidc:a" } });
    a.stop();
  });

  it("fetches discovery from discoveryURL (another host name of the issuer) through the agent chosen for its egress selection", async () => {
    const yaml = configFor("basic", issuer).replace(`url: ${issuer.url}`, `url: ${issuer.url}\n      discoveryURL: ${issuer.discoveryURL.replace("127.0.0.1", "localhost")}\n      egressSelectorType: controlplane`);
    const agent = new Agent({ keepAlive: false });
    let dialled = 0;
    const connect = agent.createConnection.bind(agent);
    agent.createConnection = ((...args: Parameters<typeof connect>) => (dialled++, connect(...args))) as typeof agent.createConnection;
    const chosen: (string | undefined)[] = [];
    const a = new JwtAuthenticators(parseAuthenticationConfig(yaml, "discovery.yaml"), { agentFor: (type) => (chosen.push(type), agent) });
    await a.start();
    expect(chosen).toEqual(["controlplane"]);
    expect(dialled).toBeGreaterThanOrEqual(2);
    expect(await a.authenticateToken(await issuer.mint({ sub: "a" }))).toMatchObject({ user: { username: "oidc:a" } });
    a.stop();
    agent.destroy();
  });

  it("refuses an issuer whose certificate the configured CA does not sign", async () => {
    const yaml = configFor("basic", other).replace(/certificateAuthority: [\s\S]*?-----END CERTIFICATE-----\n/, `certificateAuthority: |\n${issuer.caPem.trim().split("\n").map((l) => `        ${l}`).join("\n")}\n`);
    const a = new JwtAuthenticators(parseAuthenticationConfig(yaml, "wrong-ca.yaml"));
    void a.start();
    await expect.poll(() => a.notReady()[0]?.reason ?? "", { timeout: 5000 }).toMatch(/certificate|self.signed|unable to verify/i);
    a.stop();
  });
});

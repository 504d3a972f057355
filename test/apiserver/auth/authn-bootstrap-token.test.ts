// Bootstrap tokens as upstream's authenticator takes them: the format, the Secret's name, namespace, type, id, secret,
// expiration, usage and extra groups; one answer for every refusal; the chain's order; fuzzed tokens never throw.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { UserInfo } from "../../../src/api/meta.js";
import { BootstrapTokenAuthenticator } from "../../../src/apiserver/auth/authn-bootstrap-token.js";
import { AuthenticatorChain } from "../../../src/apiserver/auth/authn-chain.js";
import type { FoundObject } from "../../../src/apiserver/auth/service-account-tokens.js";
import { TOKEN_SUCCESS_CACHE_TTL_MS } from "../../../src/apiserver/auth/token-cache.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { names, T0 } from "./fixtures.js";

const TOKEN = "abcdef.0123456789abcdef";

/** A valid token Secret's decoded data; tests change fields. */
const data = (o: Record<string, string | undefined> = {}): Record<string, string> =>
  Object.fromEntries(
    Object.entries({ "token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true", expiration: new Date(T0 + 3600_000).toISOString(), ...o }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;

function authenticator(secret: Partial<FoundObject> | undefined, where = { names, namespace: "platform-system" }) {
  const reads: string[] = [];
  const a = new BootstrapTokenAuthenticator({
    names: where.names,
    clock: { now: () => T0 },
    secret: (ns, name) => {
      reads.push(`${ns}/${name}`);
      return secret && { uid: "u", type: `bootstrap.${where.names.domain}/token`, ...secret };
    },
  });
  return { a, reads };
}

describe("BootstrapTokenAuthenticator", () => {
  it("authenticates a valid token as system:bootstrap:<id> in system:bootstrappers and its extra groups, sorted", async () => {
    const { a, reads } = authenticator({ data: data({ "auth-extra-groups": "system:bootstrappers:worker,system:bootstrappers:kubeadm:default-node-token" }) });
    expect(await a.authenticateToken(TOKEN)).toEqual({
      user: { username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:bootstrappers:worker"] },
      // Its expiration, and its Secret: no cache keeps the token authenticated past the one or a change of the other.
      validUntil: T0 + 3600_000,
      dependsOn: ["secrets/platform-system/bootstrap-token-abcdef"],
    });
    expect(reads).toEqual(["platform-system/bootstrap-token-abcdef"]);
  });

  it("reads kube-system and bootstrap.kubernetes.io/token under k8s.io", async () => {
    const upstream = groupNames("k8s.io");
    const { a, reads } = authenticator({ data: data() }, { names: upstream, namespace: "kube-system" });
    expect(await a.authenticateToken(TOKEN)).toMatchObject({ user: { username: "system:bootstrap:abcdef" } });
    expect(reads).toEqual(["kube-system/bootstrap-token-abcdef"]);
    expect(upstream.bootstrapTokens).toEqual({ namespace: "kube-system", secretType: "bootstrap.kubernetes.io/token", publicNamespace: "kube-public" });
  });

  it("leaves tokens of another format to the other authenticators, without reading anything", async () => {
    const { a, reads } = authenticator({ data: data() });
    for (const t of ["abcdef0123456789abcdef", "ABCDEF.0123456789abcdef", "abcdef.0123456789abcde", "abcde.0123456789abcdef", " abcdef.0123456789abcdef", "a.b.c"]) {
      expect(await a.authenticateToken(t)).toBeUndefined();
    }
    expect(reads).toEqual([]);
  });

  it("refuses with the same words whatever is wrong: no Secret, being deleted, its type, secret, id, expiry, usage or groups", async () => {
    const cases: (Partial<FoundObject> | undefined)[] = [
      undefined,
      { deleting: true, data: data() },
      { type: "Opaque", data: data() },
      { data: data({ "token-secret": "0123456789abcdee" }) },
      { data: data({ "token-secret": undefined }) },
      { data: data({ "token-id": "abcdeg" }) },
      { data: data({ expiration: new Date(T0 - 1).toISOString() }) },
      { data: data({ expiration: "tomorrow" }) },
      { data: data({ "usage-bootstrap-authentication": "false" }) },
      { data: data({ "usage-bootstrap-authentication": undefined }) },
      { data: data({ "auth-extra-groups": "system:masters" }) },
      { data: data({ "auth-extra-groups": "system:bootstrappers:a, system:bootstrappers:b" }) },
      { data: data({ "auth-extra-groups": "system:bootstrappers:a,," }) },
    ];
    for (const secret of cases) expect(await authenticator(secret).a.authenticateToken(TOKEN)).toEqual({ error: "invalid bootstrap token" });
    // No expiration: valid for ever, as upstream.
    expect(await authenticator({ data: data({ expiration: undefined }) }).a.authenticateToken(TOKEN)).toMatchObject({ user: { username: "system:bootstrap:abcdef" } });
  });

  it("refuses when the Secret cannot be read, without throwing", async () => {
    const a = new BootstrapTokenAuthenticator({ names, clock: { now: () => T0 }, secret: () => Promise.reject(new Error("storage down")) });
    expect(await a.authenticateToken(TOKEN)).toEqual({ error: "invalid bootstrap token" });
  });

  it("comes after the token file and before the JWT issuers in the chain, which adds system:authenticated", async () => {
    const { a } = authenticator({ data: data() });
    const chain = new AuthenticatorChain({ bootstrapToken: a });
    expect(await chain.authenticate({ headers: { authorization: `Bearer ${TOKEN}` } })).toEqual({
      user: { username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:authenticated"] },
      authenticator: { authenticator: "bootstrap-token" },
    });
    expect(await new AuthenticatorChain({}).authenticate({ headers: { authorization: `Bearer ${TOKEN}` } })).toEqual({ error: "invalid bearer token" });
  });

  it("is reviewed (TokenReview) as the chain authenticates it, for the API server's audiences only, through the same cache", async () => {
    const { a, reads } = authenticator({ data: data() });
    const chain = new AuthenticatorChain({ bootstrapToken: a, apiAudiences: ["https://api.test"], clock: new FakeClock(T0) });
    const user = { username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:authenticated"] };
    expect(await chain.reviewToken(TOKEN)).toEqual({ authenticated: true, user, audiences: ["https://api.test"] });
    expect(await chain.reviewToken(TOKEN, ["vault", "https://api.test"])).toEqual({ authenticated: true, user, audiences: ["https://api.test"] });
    expect(await chain.reviewToken(TOKEN, ["vault"])).toEqual({ authenticated: false, error: "the token is not valid for the requested audiences" });
    await chain.authenticate({ headers: { authorization: `Bearer ${TOKEN}` } });
    // The review without audiences and the request share one entry; each set of named audiences has its own.
    expect(reads).toHaveLength(3);
    expect(await chain.reviewToken("abcdef.ffffffffffffffff")).toEqual({ authenticated: false, error: "invalid bootstrap token" });
  });

  it("is checked again after 10 s in the chain, as upstream's token cache: a deleted Secret stops it then, never past its expiration", async () => {
    const clock = new FakeClock(T0);
    let secret: Partial<FoundObject> | undefined = { data: data() };
    const reads: string[] = [];
    const a = new BootstrapTokenAuthenticator({ names, clock, secret: (ns, name) => (reads.push(`${ns}/${name}`), secret && { uid: "u", type: `bootstrap.${names.domain}/token`, ...secret }) });
    const chain = new AuthenticatorChain({ bootstrapToken: a, clock });
    const authenticate = () => chain.authenticate({ headers: { authorization: `Bearer ${TOKEN}` } });
    const userOf = async () => ((await authenticate()) as { user: UserInfo }).user;
    const first = await userOf();
    expect(first).toMatchObject({ username: "system:bootstrap:abcdef", groups: ["system:bootstrappers", "system:authenticated"] });
    // One user object for every request of the token while it is remembered, frozen so nobody changes it.
    expect(await userOf()).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(reads).toHaveLength(1);
    secret = undefined;
    await clock.advance(TOKEN_SUCCESS_CACHE_TTL_MS);
    expect(await userOf()).toBe(first);
    await clock.advance(1);
    expect(await authenticate()).toEqual({ error: "invalid bootstrap token" });
    // Refusals are not remembered: each one reads the Secret again, and a Secret created meanwhile counts at once.
    expect(await authenticate()).toEqual({ error: "invalid bootstrap token" });
    expect(reads).toHaveLength(3);
    secret = { data: data({ expiration: new Date(clock.now() + 4_000).toISOString() }) };
    expect(await authenticate()).toMatchObject({ user: { username: "system:bootstrap:abcdef" } });
    await clock.advance(4_000);
    expect(await authenticate()).toEqual({ error: "invalid bootstrap token" });
    expect(reads).toHaveLength(5);
  });

  it("is checked again at once in the chain when its Secret changes, also while it was being checked", async () => {
    const clock = new FakeClock(T0);
    const reads: string[] = [];
    let during: (() => void) | undefined;
    const a = new BootstrapTokenAuthenticator({
      names,
      clock,
      secret: (ns, name) => {
        reads.push(`${ns}/${name}`);
        during?.();
        return { uid: "u", type: `bootstrap.${names.domain}/token`, data: data() };
      },
    });
    const chain = new AuthenticatorChain({ bootstrapToken: a, clock });
    const authenticate = () => chain.authenticate({ headers: { authorization: `Bearer ${TOKEN}` } });
    await authenticate();
    await authenticate();
    expect(reads).toHaveLength(1);
    chain.objectChanged("secrets/platform-system/another-secret");
    await authenticate();
    expect(reads).toHaveLength(1);
    chain.objectChanged("secrets/platform-system/bootstrap-token-abcdef");
    await authenticate();
    expect(reads).toHaveLength(2);
    // A change while the token is being checked: that answer is not remembered (it may predate the change).
    chain.objectChanged("secrets/platform-system/bootstrap-token-abcdef");
    during = () => chain.objectChanged("secrets/platform-system/bootstrap-token-abcdef");
    await authenticate();
    during = undefined;
    await authenticate();
    await authenticate();
    expect(reads).toHaveLength(4);
    chain.forgetTokens();
    await authenticate();
    expect(reads).toHaveLength(5);
  });

  it("never throws on any token or Secret data (fuzzed)", async () => {
    const text = fc.oneof(fc.string({ maxLength: 24 }), fc.constant("abcdef"), fc.constant("0123456789abcdef"), fc.constant("true"), fc.constant(new Date(T0 + 1000).toISOString()));
    const fields = fc.dictionary(fc.constantFrom("token-id", "token-secret", "expiration", "usage-bootstrap-authentication", "auth-extra-groups"), text);
    const token = fc.oneof(fc.string({ maxLength: 30 }), fc.stringMatching(/^[a-z0-9]{6}\.[a-z0-9]{16}$/), fc.constant(TOKEN));
    await fc.assert(
      fc.asyncProperty(token, fields, async (t, d) => {
        const r = await authenticator({ data: d }).a.authenticateToken(t);
        if (r === undefined) return;
        const valid = t === TOKEN && d["token-id"] === "abcdef" && d["token-secret"] === "0123456789abcdef" && d["usage-bootstrap-authentication"] === "true" && (d.expiration === undefined || d.expiration === new Date(T0 + 1000).toISOString()) && (d["auth-extra-groups"] ?? "") === "";
        if (valid) expect(r).toMatchObject({ user: { username: "system:bootstrap:abcdef" } });
        else if (!("user" in r)) expect(r).toEqual({ error: "invalid bootstrap token" });
      }),
      { numRuns: 300 },
    );
  });
});

// ServiceAccount tokens: key files, issue/review round trip, audiences, expiry, live object checks, forged and fuzzed tokens.
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { decodeJwt, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { SA_KEY_FILE, SA_PUBLIC_KEY_FILE } from "../../../src/apiserver/auth/sa-signing-key.js";
import { ServiceAccountTokens, TOKEN_MAX_BYTES, type IssueTokenRequest, type TokenLookups } from "../../../src/apiserver/auth/service-account-tokens.js";
import { isPlatformError } from "../../../src/errors.js";
import { names, T0 } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ISSUER = "https://platform-ca.test";

/** Objects the lookups see; tests delete and recreate them. */
function world() {
  const objects = new Map<string, string>([
    ["sa/team/builder", "sa-uid-1"],
    ["pod/team/web-0", "pod-uid-1"],
    ["secret/team/creds", "secret-uid-1"],
  ]);
  const find = (kind: string) => (ns: string, name: string) => {
    const uid = objects.get(`${kind}/${ns}/${name}`);
    return uid === undefined ? undefined : { uid };
  };
  const lookups: TokenLookups = { serviceAccount: find("sa"), pod: find("pod"), secret: find("secret") };
  return { objects, lookups };
}

function setup(o: { dir?: string; maxExpirationSeconds?: number } = {}) {
  const clock = { t: T0, now() { return this.t; } };
  const dir = o.dir ?? tempDir();
  const tokens = new ServiceAccountTokens({ dataDir: dir, issuer: ISSUER, names, clock, apiAudiences: [ISSUER], ...(o.maxExpirationSeconds && { maxExpirationSeconds: o.maxExpirationSeconds }) });
  return { clock, dir, tokens, ...world() };
}

const request = (o: Partial<IssueTokenRequest> = {}): IssueTokenRequest => ({
  namespace: "team",
  serviceAccount: { name: "builder", uid: "sa-uid-1" },
  audiences: ["vault"],
  ...o,
});

describe("signing key files", () => {
  it("creates the private key 0600 and the public key on first start, and reuses them after", async () => {
    const first = setup();
    await first.tokens.start();
    const keyPath = join(first.dir, SA_KEY_FILE);
    expect(statSync(keyPath).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(first.dir, SA_PUBLIC_KEY_FILE), "utf8")).toBe(first.tokens.publicKeyPem);
    const keyText = readFileSync(keyPath, "utf8");
    const second = setup({ dir: first.dir });
    await second.tokens.start();
    expect(readFileSync(keyPath, "utf8")).toBe(keyText);
    const { token } = await first.tokens.issue(request());
    expect(await second.tokens.review(token, { audiences: ["vault"], lookups: second.lookups })).toHaveProperty("authenticated", true);
  });

  it("settles on one key when two instances start in an empty directory at once", async () => {
    const a = setup();
    const b = setup({ dir: a.dir });
    await Promise.all([a.tokens.start(), b.tokens.start()]);
    expect(a.tokens.publicKeyPem).toBe(b.tokens.publicKeyPem);
  });

  it.each([
    ["text that is not a key", "garbage", "KEY_INVALID"],
    ["an RSA key", generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }) as string, "KEY_UNSUPPORTED"],
  ])("refuses a key file holding %s", async (_name, pem, code) => {
    const dir = tempDir();
    writeFileSync(join(dir, SA_KEY_FILE), pem, { mode: 0o600 });
    const err = await setup({ dir }).tokens.start().catch((e: unknown) => e);
    expect(isPlatformError(err, code as "KEY_INVALID")).toBe(true);
  });

  it("is NOT_READY before start()", async () => {
    const err = await setup().tokens.issue(request()).catch((e: unknown) => e);
    expect(isPlatformError(err, "NOT_READY")).toBe(true);
  });
});

describe("issue and review", () => {
  const s = setup();
  beforeAll(() => s.tokens.start());

  it("issues upstream-shaped claims", async () => {
    const issued = await s.tokens.issue(request({ boundObject: { kind: "Pod", name: "web-0", uid: "pod-uid-1" } }));
    const claims = decodeJwt(issued.token);
    const now = T0 / 1000;
    expect(claims).toEqual({
      iss: ISSUER,
      sub: "system:serviceaccount:team:builder",
      aud: ["vault"],
      iat: now,
      nbf: now,
      exp: now + 3600,
      jti: expect.any(String),
      "platform.io": { namespace: "team", serviceaccount: { name: "builder", uid: "sa-uid-1" }, pod: { name: "web-0", uid: "pod-uid-1" } },
    });
    expect(issued.expirationTimestamp).toBe("2030-01-01T01:00:00Z");
  });

  it("reviews its own token as the ServiceAccount, with the audience intersection", async () => {
    const { token } = await s.tokens.issue(request({ audiences: ["vault", "db"], boundObject: { kind: "Pod", name: "web-0", uid: "pod-uid-1" } }));
    const status = await s.tokens.review(token, { audiences: ["db", "other"], lookups: s.lookups });
    expect(status).toEqual({
      authenticated: true,
      audiences: ["db"],
      user: {
        username: "system:serviceaccount:team:builder",
        uid: "sa-uid-1",
        groups: ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"],
        extra: {
          "authentication.platform.io/pod-name": ["web-0"],
          "authentication.platform.io/pod-uid": ["pod-uid-1"],
          "authentication.platform.io/credential-id": [`JTI=${decodeJwt(token).jti}`],
        },
      },
    });
  });

  it.each([
    ["a token for another audience", ["vault"], ["db"], false],
    ["a review without audiences and a token for another audience", ["vault"], undefined, false],
    ["a review without audiences and a token for the API server", [ISSUER], undefined, true],
  ])("answers %s", async (_name, tokenAudiences, reviewAudiences, ok) => {
    const { token } = await s.tokens.issue(request({ audiences: tokenAudiences }));
    const status = await s.tokens.review(token, { ...(reviewAudiences && { audiences: reviewAudiences }), lookups: s.lookups });
    expect(status.authenticated).toBe(ok);
    if (!ok) expect(status.error).toMatch(/do not include any of/);
  });

  it.each([
    ["expirationSeconds below 600", { expirationSeconds: 300 }, "expected `expirationSeconds` ≥ 600, got 300"],
    ["no audiences", { audiences: [] }, "expected `audiences` to be a non-empty list of strings, got []"],
    ["a bound object of another kind", { boundObject: { kind: "Node", name: "n", uid: "u" } as never }, /expected `boundObject` to be a Pod or Secret/],
  ])("refuses %s", async (_name, o, message) => {
    const err = await s.tokens.issue(request(o)).catch((e: unknown) => e);
    expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it("shortens a lifetime above the server maximum", async () => {
    const short = setup({ dir: s.dir, maxExpirationSeconds: 7200 });
    await short.tokens.start();
    const issued = await short.tokens.issue(request({ expirationSeconds: 100 * 86400 }));
    expect(issued.expirationSeconds).toBe(7200);
    const claims = decodeJwt(issued.token);
    expect(claims.exp! - claims.iat!).toBe(7200);
  });
});

describe("review refuses what no longer holds", () => {
  it.each([
    ["an expired token beyond the leeway", 3600 + 61, false, /has expired/],
    ["an expired token within the leeway", 3600 + 59, true, undefined],
    ["a token before its nbf beyond the leeway", -61, false, /claims are invalid/],
    ["a token before its nbf within the leeway", -59, true, undefined],
  ])("%s", async (_name, offsetSeconds, ok, error) => {
    const s = setup();
    await s.tokens.start();
    const { token } = await s.tokens.issue(request());
    s.clock.t = T0 + offsetSeconds * 1000;
    const status = await s.tokens.review(token, { audiences: ["vault"], lookups: s.lookups });
    expect(status.authenticated).toBe(ok);
    if (error) expect(status.error).toMatch(error);
  });

  it.each([
    ["the ServiceAccount deleted", (o: Map<string, string>) => o.delete("sa/team/builder"), undefined, "the ServiceAccount team/builder has been deleted"],
    ["the ServiceAccount recreated with a new uid", (o: Map<string, string>) => o.set("sa/team/builder", "sa-uid-2"), undefined, "the ServiceAccount UID (sa-uid-2) does not match the token's (sa-uid-1)"],
    ["the bound Secret deleted", (o: Map<string, string>) => o.delete("secret/team/creds"), { kind: "Secret" as const, name: "creds", uid: "secret-uid-1" }, "the bound Secret team/creds has been deleted"],
    ["the bound Pod recreated", (o: Map<string, string>) => o.set("pod/team/web-0", "pod-uid-9"), { kind: "Pod" as const, name: "web-0", uid: "pod-uid-1" }, "the bound Pod team/web-0 UID (pod-uid-9) does not match the token's (pod-uid-1)"],
  ])("refuses a token after %s", async (_name, change, boundObject, error) => {
    const s = setup();
    await s.tokens.start();
    const { token } = await s.tokens.issue(request({ ...(boundObject && { boundObject }) }));
    expect(await s.tokens.review(token, { audiences: ["vault"], lookups: s.lookups })).toHaveProperty("authenticated", true);
    change(s.objects);
    expect(await s.tokens.review(token, { audiences: ["vault"], lookups: s.lookups })).toEqual({ authenticated: false, error });
  });

  it("reports an error, not an exception, when a lookup fails", async () => {
    const s = setup();
    await s.tokens.start();
    const { token } = await s.tokens.issue(request());
    const lookups = { serviceAccount: () => Promise.reject(new Error("storage is down")) };
    expect(await s.tokens.review(token, { audiences: ["vault"], lookups })).toEqual({ authenticated: false, error: "cannot check the token's objects: storage is down" });
  });
});

describe("review refuses forged and malformed tokens", () => {
  const s = setup();
  beforeAll(() => s.tokens.start());
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const claims = () => ({ iss: ISSUER, sub: "system:serviceaccount:team:builder", aud: ["vault"], exp: T0 / 1000 + 3600, nbf: T0 / 1000, iat: T0 / 1000, "platform.io": { namespace: "team", serviceaccount: { name: "builder", uid: "sa-uid-1" } } });
  const review = (token: unknown) => s.tokens.review(token, { audiences: ["vault"], lookups: s.lookups });

  it.each([
    ["alg none", async () => `${b64({ alg: "none", typ: "JWT" })}.${b64(claims())}.`, /not accepted/],
    ["HS256 keyed with the public key", async () => new SignJWT(claims()).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(s.tokens.publicKeyPem)), /not accepted/],
    ["ES256 with another key", async () => new SignJWT(claims()).setProtectedHeader({ alg: "ES256" }).sign(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey), /signature is invalid/],
    ["ES384 with a P-384 key", async () => new SignJWT(claims()).setProtectedHeader({ alg: "ES384" }).sign(generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey), /not accepted/],
    ["a valid signature over a changed payload", async () => {
      const [h, , sig] = (await s.tokens.issue(request())).token.split(".");
      return `${h}.${b64({ ...claims(), sub: "system:serviceaccount:team:admin" })}.${sig}`;
    }, /signature is invalid/],
  ])("refuses %s", async (_name, make, error) => {
    const status = await review(await make());
    expect(status.authenticated).toBe(false);
    expect(status.error).toMatch(error);
  });

  it.each([
    ["an empty token", ""],
    ["a number", 42],
    ["null", null],
    ["two parts", "a.b"],
    ["three empty parts", ".."],
    ["non-base64 parts", "!!.??.**"],
    ["a token from another issuer", `${b64({ alg: "ES256" })}.${b64({ ...claims(), iss: "elsewhere" })}.c2ln`],
    ["a huge token", `${"a".repeat(TOKEN_MAX_BYTES)}.b.c`],
  ])("answers %s with an error", async (_name, token) => {
    const status = await review(token);
    expect(status.authenticated).toBe(false);
    expect(status.error).toEqual(expect.any(String));
  });

  it("never throws and never authenticates arbitrary text or JWT-shaped junk", async () => {
    const part = fc.oneof(fc.base64String(), fc.string(), fc.constant(b64({ alg: "ES256" })), fc.constant(b64(claims())));
    const token = fc.oneof(fc.string({ maxLength: 300 }), fc.tuple(part, part, part).map((p) => p.join(".")));
    await fc.assert(
      fc.asyncProperty(token, async (t) => {
        const status = await review(t);
        expect(status.authenticated).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses every single-character change of a valid token", async () => {
    const { token } = await s.tokens.issue(request());
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: token.length - 1 }), fc.constantFrom("A", "_", "-", ".", "z"), async (at, ch) => {
        const changed = token.slice(0, at) + ch + token.slice(at + 1);
        fc.pre(changed !== token);
        // The last character of a base64url signature may carry unused bits, so a change there can decode alike.
        fc.pre(at !== token.length - 1);
        expect((await review(changed)).authenticated).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});

describe("options", () => {
  it.each([
    ["an empty issuer", { issuer: "" }, /`issuer`/],
    ["a tiny maximum", { maxExpirationSeconds: 10 }, /`maxExpirationSeconds`/],
    ["no API audiences", { apiAudiences: [] }, /`apiAudiences`/],
    ["a leeway above 10 minutes", { leewaySeconds: 601 }, /`leewaySeconds`/],
  ])("refuses %s", (_name, o, message) => {
    const dir = tempDir();
    mkdirSync(dir, { recursive: true });
    expect(() => new ServiceAccountTokens({ dataDir: dir, issuer: ISSUER, names, clock: { now: () => T0 }, ...o })).toThrow(message);
  });
});

// Fuzzed credentials and impersonation headers over HTTPS: only 400, 401 or 403 (200 where allowed), never a 5xx.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import fc from "fast-check";
import { SignJWT, UnsecuredJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TOKEN_ISSUER } from "../../../src/apiserver/bootstrap/auth.js";
import { MAX_HEADER_BYTES } from "../../../src/apiserver/http/app.js";
import { TOKENS, useSecureFixture, type CallOptions, type SecureFixture } from "./fixtures.js";

const fx = useSecureFixture();
const PATH = "/api/v1/namespaces/default/serviceaccounts";
const RUNS = 60;
/** node's default limit on the request head (http.maxHeaderSize). */
const HEADER_LIMIT = MAX_HEADER_BYTES;

const printable = (max: number) => fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: max });
const b64url = (s: string) => Buffer.from(s).toString("base64url");

let real = "";
let forged: string[] = [];

beforeAll(async () => {
  const f = fx();
  const admin = { token: TOKENS.admin };
  await f.call("POST", PATH, { ...admin, body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "fuzzed" } } });
  real = (await f.call("POST", `${PATH}/fuzzed/token`, { ...admin, body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenRequest", spec: {} } })).body.status.token;
  const claims = JSON.parse(Buffer.from(real.split(".")[1]!, "base64url").toString());
  const now = Math.floor(f.clock.now() / 1000);
  const [h, p, s] = real.split(".") as [string, string, string];
  forged = [
    new UnsecuredJWT(claims).encode(),
    `${b64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${p}.`,
    await new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).sign(randomBytes(32)),
    await new SignJWT(claims).setProtectedHeader({ alg: "ES256" }).sign(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey),
    await new SignJWT({ ...claims, sub: "system:serviceaccount:kube-system:admin" }).setProtectedHeader({ alg: "ES256" }).sign(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey),
    `${h}.${b64url(JSON.stringify({ ...claims, exp: now + 999_999 }))}.${s}`,
    `${h}.${p}.${s.slice(0, -4)}AAAA`,
    `${h}.${p}`,
    `${b64url(JSON.stringify({ alg: "ES256" }))}.${b64url(JSON.stringify({ iss: DEFAULT_TOKEN_ISSUER, exp: "soon" }))}.${s}`,
  ];
});

async function expectOneOf(f: SecureFixture, o: CallOptions, allowed: number[]): Promise<void> {
  const r = await f.call("GET", PATH, o);
  expect(allowed, `${r.status} ${r.text}`).toContain(r.status);
  if (r.status >= 400) expect(r.body).toMatchObject({ kind: "Status", code: r.status });
}

describe("fuzzed credentials never break the server", () => {
  it("answers 401 to forged ServiceAccount tokens (alg none, HMAC, another key, edited claims or signature)", async () => {
    const f = fx();
    for (const token of forged) {
      const r = await f.call("GET", PATH, { token });
      expect(r.status, token).toBe(401);
    }
    // The genuine token authenticates (and its ServiceAccount may not list, so 403, not 401).
    expect((await f.call("GET", PATH, { token: real })).status).toBe(403);
  });

  it("answers 401 to random Authorization values and JWT-shaped tokens", async () => {
    const f = fx();
    const jwtish = fc.tuple(printable(60), printable(200), printable(90)).map(([a, b, c]) => `Bearer ${b64url(a)}.${b64url(b)}.${b64url(c)}`);
    const scheme = fc.tuple(fc.constantFrom("Bearer", "bearer", "Basic", "Negotiate", "", "Bearer  "), printable(300)).map(([s, v]) => `${s} ${v}`);
    await fc.assert(fc.asyncProperty(fc.oneof(printable(400), jwtish, scheme), async (authorization) => {
      await expectOneOf(f, { headers: { authorization } }, [400, 401]);
    }), { numRuns: RUNS });
  });

  it("answers 400 or 403 to random impersonation by a user without the permission", async () => {
    const f = fx();
    const key = fc.stringMatching(/^[a-z0-9%._-]{0,20}$/);
    const headers = fc.record({
      "impersonate-user": fc.option(printable(80), { nil: undefined }),
      "impersonate-group": fc.option(fc.array(printable(40), { maxLength: 4 }), { nil: undefined }),
      "impersonate-uid": fc.option(printable(40), { nil: undefined }),
      extra: fc.array(fc.tuple(key, printable(40)), { maxLength: 3 }),
    }, { requiredKeys: ["extra"] });
    await fc.assert(fc.asyncProperty(headers, async ({ extra, ...h }) => {
      const all: Record<string, string | string[]> = Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined) as [string, string | string[]][]);
      for (const [k, v] of extra) all[`impersonate-extra-${k}`] = v;
      const asked = Object.keys(all).length > 0;
      await expectOneOf(f, { token: TOKENS.alice, headers: all }, asked ? [400, 403] : [403]);
      // The administrator may impersonate anyone; the impersonated user then usually lacks the permission.
      await expectOneOf(f, { token: TOKENS.admin, headers: all }, [200, 400, 403]);
    }), { numRuns: RUNS });
  });

  it.each([4 * 1024, 12 * 1024, HEADER_LIMIT - 1024])("answers 401 to a %i-byte bearer token", async (size) => {
    const f = fx();
    await expectOneOf(f, { token: "x".repeat(size) }, [401]);
  });

  it("answers 431 above the header limit, and keeps serving", async () => {
    const f = fx();
    const r = await f.call("GET", PATH, { token: TOKENS.admin, headers: { "x-padding": "p".repeat(HEADER_LIMIT) } });
    expect(r.status).toBe(431);
    expect(r.body).toMatchObject({ kind: "Status", status: "Failure", code: 431 });
    expect((await f.call("GET", PATH, { token: TOKENS.admin })).status).toBe(200);
  });

  it("answers TokenReviews of random tokens with authenticated false", async () => {
    const f = fx();
    await fc.assert(fc.asyncProperty(fc.oneof(printable(300), fc.constantFrom(...forged)), async (token) => {
      const r = await f.call("POST", `/apis/${f.names.authentication}/v1/tokenreviews`, {
        token: TOKENS.admin,
        body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenReview", spec: { token } },
      });
      expect([201, 422], r.text).toContain(r.status);
      if (r.status === 201) expect(r.body.status.authenticated).not.toBe(true);
    }), { numRuns: RUNS });
  });
});

// Token Secrets' long-lived tokens: signed with the server's key file, reviewed against the Secret and ServiceAccount
// as upstream's legacy validator (token match, invalid-since label, uid, deletion), audiences, forged and malformed tokens.
import { generateKeyPairSync } from "node:crypto";
import fc from "fast-check";
import { join } from "node:path";
import { SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { readLegacyClaims, signLegacyToken, type LegacyTokenSubject } from "../../../src/apiserver/auth/legacy-tokens.js";
import { readSigningKey, SA_KEY_FILE, type SigningKey } from "../../../src/apiserver/auth/sa-signing-key.js";
import { ServiceAccountTokens, type FoundObject, type TokenLookups } from "../../../src/apiserver/auth/service-account-tokens.js";
import { isPlatformError } from "../../../src/errors.js";
import { names, T0 } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ISSUER = "https://platform-ca.test";
const SUBJECT: LegacyTokenSubject = { namespace: "ci", secretName: "robot-token", serviceAccountName: "robot", serviceAccountUid: "sa-uid-1" };

let tokens: ServiceAccountTokens;
let key: SigningKey;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  tokens = new ServiceAccountTokens({ dataDir: dir, issuer: ISSUER, names, clock: { now: () => T0 }, apiAudiences: [ISSUER] });
  await tokens.start();
  // What the token controller does: read the key file the server created.
  key = await readSigningKey(join(dir, SA_KEY_FILE));
});

/** The Secret holding `token` and the account (null: none), as the lookups see them; tests change them. */
function world(token: string, secret: Partial<FoundObject> = {}, account: Partial<FoundObject> | null = {}) {
  const lookups: TokenLookups = {
    serviceAccount: (ns, name) => (ns === "ci" && name === "robot" && account ? { uid: "sa-uid-1", ...account } : undefined),
    secret: (ns, name) => (ns === "ci" && name === "robot-token" ? { uid: "secret-uid", data: { token }, ...secret } : undefined),
  };
  return lookups;
}

describe("token Secrets' tokens", () => {
  it("authenticate as the ServiceAccount while the Secret holds them and the account has the uid they name", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    expect(tokens.looksLikeOurs(token)).toBe(true);
    const status = await tokens.review(token, { lookups: world(token) });
    expect(status).toEqual({
      authenticated: true,
      user: { username: "system:serviceaccount:ci:robot", uid: "sa-uid-1", groups: ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"] },
      audiences: [ISSUER],
    });
  });

  it("carry upstream's issuer and claim names under k8s.io, and the product's otherwise", async () => {
    const upstream = groupNames("k8s.io");
    const payload = JSON.parse(Buffer.from((await signLegacyToken(key, upstream, SUBJECT)).split(".")[1]!, "base64url").toString());
    expect(payload).toEqual({
      iss: "kubernetes/serviceaccount",
      sub: "system:serviceaccount:ci:robot",
      "kubernetes.io/serviceaccount/namespace": "ci",
      "kubernetes.io/serviceaccount/secret.name": "robot-token",
      "kubernetes.io/serviceaccount/service-account.name": "robot",
      "kubernetes.io/serviceaccount/service-account.uid": "sa-uid-1",
    });
    expect(readLegacyClaims(upstream, payload)).toEqual(SUBJECT);
    const ours = JSON.parse(Buffer.from((await signLegacyToken(key, names, SUBJECT)).split(".")[1]!, "base64url").toString());
    expect(ours).toMatchObject({ iss: "platform/serviceaccount", "platform.io/serviceaccount/secret.name": "robot-token" });
  });

  it("are refused once the Secret is gone, being deleted, holds another token or is labelled invalid", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    const other = await signLegacyToken(key, names, { ...SUBJECT, serviceAccountUid: "sa-uid-0" });
    const cases: [TokenLookups, RegExp][] = [
      [{ ...world(token), secret: () => undefined }, /Secret ci\/robot-token has been deleted/],
      [world(token, { deleting: true }), /Secret ci\/robot-token has been deleted/],
      [world(token, { data: { token: other } }), /does not match the one in Secret ci\/robot-token/],
      [world(token, { labels: { "platform.io/legacy-token-invalid-since": "2026-11-01" } }), /invalid since 2026-11-01/],
    ];
    for (const [lookups, why] of cases) expect(await tokens.review(token, { lookups })).toEqual({ authenticated: false, error: expect.stringMatching(why) });
  });

  it("are refused once the ServiceAccount is gone, being deleted, or made again with another uid", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    const cases: [TokenLookups, RegExp][] = [
      [world(token, {}, null), /ServiceAccount ci\/robot has been deleted/],
      [world(token, {}, { deleting: true }), /ServiceAccount ci\/robot has been deleted/],
      [world(token, {}, { uid: "sa-uid-2" }), /UID \(sa-uid-2\) does not match the token's \(sa-uid-1\)/],
    ];
    for (const [lookups, why] of cases) expect(await tokens.review(token, { lookups })).toEqual({ authenticated: false, error: expect.stringMatching(why) });
  });

  it("stand for the API server's audiences only: a review for another audience refuses them", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    expect(await tokens.review(token, { audiences: ["vault"], lookups: world(token) })).toEqual({ authenticated: false, error: expect.stringMatching(/valid only for the API server's audiences/) });
    expect(await tokens.review(token, { audiences: ["vault", ISSUER], lookups: world(token) })).toMatchObject({ authenticated: true, audiences: [ISSUER] });
  });

  it("are refused when signed by another key, with another algorithm, or with claims missing or inconsistent", async () => {
    const { privateKey: stranger } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const forged = await signLegacyToken({ ...key, privateKey: stranger }, names, SUBJECT);
    expect(await tokens.review(forged, { lookups: world(forged) })).toEqual({ authenticated: false, error: "the token's signature is invalid" });
    const hs = await new SignJWT({ "platform.io/serviceaccount/namespace": "ci" }).setProtectedHeader({ alg: "HS256" }).setIssuer("platform/serviceaccount").sign(new Uint8Array(32));
    expect(await tokens.review(hs, { lookups: world(hs) })).toMatchObject({ authenticated: false, error: expect.stringMatching(/algorithm is not accepted/) });
    const base = { "platform.io/serviceaccount/namespace": "ci", "platform.io/serviceaccount/secret.name": "robot-token", "platform.io/serviceaccount/service-account.name": "robot" };
    const sign = (claims: Record<string, string>, sub: string) => new SignJWT(claims).setProtectedHeader({ alg: "ES256" }).setIssuer("platform/serviceaccount").setSubject(sub).sign(key.privateKey);
    const noUid = await sign(base, "system:serviceaccount:ci:robot");
    expect(await tokens.review(noUid, { lookups: world(noUid) })).toEqual({ authenticated: false, error: "the token's platform.io/serviceaccount/service-account.uid claim is missing" });
    const wrongSub = await sign({ ...base, "platform.io/serviceaccount/service-account.uid": "sa-uid-1" }, "system:serviceaccount:ci:admin");
    expect(await tokens.review(wrongSub, { lookups: world(wrongSub) })).toEqual({ authenticated: false, error: "the token's subject does not match its ServiceAccount claims" });
  });

  it("label their Secret with the day of their use at most once a day, and authenticate when the label cannot be written", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    const today = new Date(T0).toISOString().slice(0, 10);
    const labelled: string[] = [];
    const labelSecret = async (ns: string, name: string, uid: string, label: string, value: string) => void labelled.push(`${ns}/${name} ${uid} ${label}=${value}`);
    const review = (labels?: Record<string, string>, label = labelSecret) => tokens.review(token, { lookups: { ...world(token, labels ? { labels } : {}), labelSecret: label } });
    expect(await review()).toMatchObject({ authenticated: true });
    expect(labelled).toEqual([`ci/robot-token secret-uid platform.io/legacy-token-last-used=${today}`]);
    // Today's label, or tomorrow's (a clock ahead): nothing written; yesterday's: written again.
    await review({ "platform.io/legacy-token-last-used": today });
    await review({ "platform.io/legacy-token-last-used": new Date(T0 + 86_400_000).toISOString().slice(0, 10) });
    expect(labelled).toHaveLength(1);
    await review({ "platform.io/legacy-token-last-used": new Date(T0 - 86_400_000).toISOString().slice(0, 10) });
    expect(labelled).toHaveLength(2);
    expect(await review(undefined, () => Promise.reject(new Error("conflict")))).toMatchObject({ authenticated: true });
    // A refused token labels nothing.
    await tokens.review(token, { lookups: { ...world(token, { labels: { "platform.io/legacy-token-invalid-since": today } }), labelSecret } });
    expect(labelled).toHaveLength(2);
  });

  it("cannot be checked without Secret lookups, and a lookup that fails refuses rather than throws", async () => {
    const token = await signLegacyToken(key, names, SUBJECT);
    expect(await tokens.review(token, { lookups: { serviceAccount: () => ({ uid: "sa-uid-1" }) } })).toMatchObject({ authenticated: false, error: expect.stringMatching(/no Secret or ServiceAccount lookup/) });
    const failing: TokenLookups = { ...world(token), secret: () => Promise.reject(new Error("storage down")) };
    expect(await tokens.review(token, { lookups: failing })).toEqual({ authenticated: false, error: "cannot check the token's objects: storage down" });
  });

  it("never throw and authenticate only the exact claims, whatever a token signed with the key carries (fuzzed)", async () => {
    const p = "platform.io/serviceaccount";
    const valid: Record<string, unknown> = { [`${p}/namespace`]: "ci", [`${p}/secret.name`]: "robot-token", [`${p}/service-account.name`]: "robot", [`${p}/service-account.uid`]: "sa-uid-1", sub: "system:serviceaccount:ci:robot" };
    const KEEP = Symbol("keep");
    const DROP = Symbol("drop");
    const change = fc.oneof(fc.constant(KEEP), fc.constant(DROP), fc.string({ maxLength: 12 }), fc.integer(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }), fc.constant(""));
    const changes = fc.tuple(...Object.keys(valid).map(() => fc.oneof(fc.constant(KEEP), change)));
    await fc.assert(
      fc.asyncProperty(changes, async (picked) => {
        const claims: Record<string, unknown> = {};
        Object.keys(valid).forEach((k, i) => {
          const c = picked[i];
          if (c === KEEP) claims[k] = valid[k];
          else if (c !== DROP) claims[k] = c;
        });
        const token = await new SignJWT(claims).setProtectedHeader({ alg: "ES256" }).setIssuer("platform/serviceaccount").sign(key.privateKey);
        const status = await tokens.review(token, { lookups: world(token) });
        const exact = Object.keys(valid).every((k) => claims[k] === valid[k]);
        expect(status.authenticated).toBe(exact);
        if (!exact) expect(status.error).toEqual(expect.any(String));
      }),
      { numRuns: 300 },
    );
  });

  it("come from a key file that must exist and hold a P-256 key", async () => {
    await expect(readSigningKey(join(dir, "missing.pem"))).rejects.toSatisfy((e) => isPlatformError(e, "KEY_INVALID") && /missing\.pem does not exist/.test(e.message));
  });
});

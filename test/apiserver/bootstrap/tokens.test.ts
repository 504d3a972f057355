// TokenRequest → TokenReview over HTTPS: audiences, and revocation when the ServiceAccount or the bound Secret goes away.
import { describe, expect, it } from "vitest";
import { TOKENS, useSecureFixture, type SecureFixture, whoAmI } from "./fixtures.js";

const fx = useSecureFixture();
const admin = { token: TOKENS.admin };
const NS = "/api/v1/namespaces/default";

async function createObject(f: SecureFixture, plural: string, kind: string, name: string): Promise<string> {
  const r = await f.call("POST", `${NS}/${plural}`, { ...admin, body: { apiVersion: "v1", kind, metadata: { name } } });
  expect(r.status, r.text).toBe(201);
  return r.body.metadata.uid;
}

async function requestToken(f: SecureFixture, sa: string, spec: Record<string, unknown>): Promise<string> {
  const r = await f.call("POST", `${NS}/serviceaccounts/${sa}/token`, { ...admin, body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenRequest", spec } });
  expect(r.status, r.text).toBe(201);
  return r.body.status.token;
}

async function review(f: SecureFixture, token: string, audiences?: string[]): Promise<any> {
  const spec = { token, ...(audiences && { audiences }) };
  const r = await f.call("POST", `/apis/${f.names.authentication}/v1/tokenreviews`, { ...admin, body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenReview", spec } });
  expect(r.status, r.text).toBe(201);
  return r.body.status;
}

describe("TokenRequest and TokenReview round trip", () => {
  it("reviews a token for its audience, and refuses it for another audience and as an API credential", async () => {
    const f = fx();
    const uid = await createObject(f, "serviceaccounts", "ServiceAccount", "deployer");
    const token = await requestToken(f, "deployer", { audiences: ["vault"] });
    expect(await review(f, token, ["vault", "other"])).toMatchObject({
      authenticated: true,
      audiences: ["vault"],
      user: { username: "system:serviceaccount:default:deployer", uid, groups: ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"] },
    });
    const wrong = await review(f, token, ["other"]);
    expect(wrong.authenticated).toBe(false);
    expect(wrong.error).toMatch(/do not include any of \["other"\]/);
    // Not issued for the API server's own audience, so it does not log in to it.
    expect((await whoAmI(f, { token })).status).toBe(401);
  });

  it("refuses a token after its ServiceAccount is deleted and recreated under the same name", async () => {
    const f = fx();
    await createObject(f, "serviceaccounts", "ServiceAccount", "rotating");
    const token = await requestToken(f, "rotating", {});
    expect((await whoAmI(f, { token })).status).toBe(201);
    expect((await f.call("DELETE", `${NS}/serviceaccounts/rotating`, admin)).status).toBe(200);
    await createObject(f, "serviceaccounts", "ServiceAccount", "rotating");
    const after = await review(f, token);
    expect(after.authenticated).toBe(false);
    expect(after.error).toMatch(/ServiceAccount UID .* does not match/);
    const refused = await whoAmI(f, { token });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toMatch(/does not match/);
    expect((await whoAmI(f, { token: await requestToken(f, "rotating", {}) })).status).toBe(201);
  });

  it("refuses a Secret-bound token once the Secret is deleted", async () => {
    const f = fx();
    await createObject(f, "serviceaccounts", "ServiceAccount", "bound");
    const secretUid = await createObject(f, "secrets", "Secret", "bound-secret");
    const token = await requestToken(f, "bound", { boundObjectRef: { kind: "Secret", apiVersion: "v1", name: "bound-secret", uid: secretUid } });
    expect(await review(f, token)).toMatchObject({ authenticated: true });
    expect((await f.call("DELETE", `${NS}/secrets/bound-secret`, admin)).status).toBe(200);
    const after = await review(f, token);
    expect(after).toMatchObject({ authenticated: false, error: "invalid ServiceAccount token: the bound Secret default/bound-secret has been deleted" });
    expect((await whoAmI(f, { token })).status).toBe(401);
  });

  it("refuses to bind a token to a Secret whose uid changed", async () => {
    const f = fx();
    await createObject(f, "serviceaccounts", "ServiceAccount", "binder");
    await createObject(f, "secrets", "Secret", "binder-secret");
    const r = await f.call("POST", `${NS}/serviceaccounts/binder/token`, {
      ...admin,
      body: { apiVersion: `${f.names.authentication}/v1`, kind: "TokenRequest", spec: { boundObjectRef: { kind: "Secret", apiVersion: "v1", name: "binder-secret", uid: "stale" } } },
    });
    expect(r.status).toBe(409);
  });

  it("reviews a token-file token only for the API server's own audience", async () => {
    const f = fx();
    expect(await review(f, TOKENS.bob)).toMatchObject({ authenticated: true, user: { username: "bob" } });
    expect(await review(f, TOKENS.bob, ["vault"])).toMatchObject({ authenticated: false });
  });
});

// The identity layer wired into a real API server over HTTPS: client certificates, tokens, RBAC, impersonation, admission.
import { request as httpsRequest } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultAdmissionPlugins } from "../../../src/apiserver/auth/admission-plugins.js";
import { AdmissionChain } from "../../../src/apiserver/auth/admission.js";
import { createAuthPipeline } from "../../../src/apiserver/auth/auth-pipeline.js";
import { AuthenticatorChain } from "../../../src/apiserver/auth/authn-chain.js";
import { ServiceAccountAuthenticator } from "../../../src/apiserver/auth/authn-service-account.js";
import { parseCredentialFile, TokenFileAuthenticator } from "../../../src/apiserver/auth/authn-token-file.js";
import { X509Authenticator } from "../../../src/apiserver/auth/authn-x509.js";
import { privilegedGroupsAuthorizer } from "../../../src/apiserver/auth/authorizer.js";
import { applyBootstrapPolicy } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { StorageRbacLister } from "../../../src/apiserver/auth/rbac-lister.js";
import { registryBootstrapWriter, registryLookups } from "../../../src/apiserver/auth/registry-adapters.js";
import { ServiceAccountTokens } from "../../../src/apiserver/auth/service-account-tokens.js";
import { createSubjectAccessReviewHandler } from "../../../src/apiserver/auth/subject-access-review.js";
import { createSelfSubjectReviewHandler, createTokenRequestHandler, createTokenReviewHandler } from "../../../src/apiserver/auth/token-handlers.js";
import { createApiServer, type ApiServer } from "../../../src/apiserver/server.js";
import { MemoryAuditSink } from "../../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../../src/config/audit-policy.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { TOKEN_SUCCESS_CACHE_TTL_MS } from "../../../src/apiserver/auth/token-cache.js";
import { issueCert, names, T0, CLIENT_CA } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ISSUER = "https://platform-ca.test";
const clock = new FakeClock(T0 + 60_000);
const storage = new MemoryStorage({ clock });
const lister = new StorageRbacLister({ storage, names, clock });
const authorizer = privilegedGroupsAuthorizer(new RbacAuthorizer({ lister, names }));
const tokens = new ServiceAccountTokens({ dataDir: tempDir(), issuer: ISSUER, names, clock });
const tokenFile = new TokenFileAuthenticator(parseCredentialFile('admin-token,admin,uid-admin,"system:masters"\nbob-token,bob,uid-bob\n'));
const auditSink = new MemoryAuditSink();
let server: ApiServer;
let clientCert: { pem: string; keyPem: string };

interface Reply {
  status: number;
  body: any;
}

/** One HTTPS request; `as` picks the credentials: a token, the client certificate, or none. */
function call(method: string, path: string, o: { token?: string; cert?: boolean; body?: unknown; headers?: Record<string, string> } = {}): Promise<Reply> {
  const url = new URL(server.address + path);
  const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
  const headers: Record<string, string> = { ...(o.headers ?? {}), ...(payload && { "content-type": "application/json" }), ...(o.token && { authorization: `Bearer ${o.token}` }) };
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method, headers, rejectUnauthorized: false, ...(o.cert && { cert: clientCert.pem, key: clientCert.keyPem }) },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

beforeAll(async () => {
  const serverCert = await issueCert({ cn: "localhost", usages: ["digital signature", "server auth"], issuer: await testCa({ commonName: "server CA" }) });
  clientCert = await issueCert({ cn: "carol", o: ["system:masters"] });
  const x509 = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock });
  const serviceAccount = new ServiceAccountAuthenticator({ tokens, lookups: { serviceAccount: (ns, n) => registryLookups(server.registry).serviceAccount(ns, n) } });
  const admission = new AdmissionChain({ names, authorizer, ...defaultAdmissionPlugins() });
  const authenticator = new AuthenticatorChain({ x509, tokenFile, serviceAccount, clock });
  const pipeline = createAuthPipeline({ authenticator, authorizer, admission, names });
  const audit = { policy: parseAuditPolicy("apiVersion: audit.platform.io/v1\nkind: Policy\nrules: [{ level: Metadata }]\n", "policy").policy, sink: auditSink };
  server = createApiServer({ storage, pipeline, clock, tls: { key: serverCert.keyPem, cert: serverCert.pem, requestCert: true }, audit });
  const lookups = registryLookups(server.registry);
  server.registerCreateHandler("", "serviceaccounts/token", createTokenRequestHandler({ tokens, lookups }));
  server.registerCreateHandler(names.authentication, "tokenreviews", createTokenReviewHandler({ review: (token, audiences) => authenticator.reviewToken(token, audiences) }));
  server.registerCreateHandler(names.authentication, "selfsubjectreviews", createSelfSubjectReviewHandler());
  server.registerCreateHandler(names.authorization, "subjectaccessreviews", createSubjectAccessReviewHandler(authorizer));
  await tokens.start();
  await lister.start();
  await server.start();
  await applyBootstrapPolicy(names, registryBootstrapWriter(server.registry));
  for (let i = 0; i < 200 && lister.clusterRoleBindings().length === 0; i++) await new Promise((r) => setImmediate(r));
});

afterAll(async () => {
  lister.stop();
  await server?.stop();
});

const SSR = `/apis/${names.authentication}/v1/selfsubjectreviews`;
const ssrBody = { apiVersion: `${names.authentication}/v1`, kind: "SelfSubjectReview", metadata: {} };

describe("the auth pipeline in a running server", () => {
  it.each([
    ["no credentials", {}, /no credentials were presented/],
    ["basic credentials", { headers: { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` } }, /basic authentication is not supported/],
    ["an unknown token", { token: "nope" }, /invalid bearer token/],
  ])("answers 401 for %s", async (_name, o, message) => {
    const r = await call("GET", `/apis/${names.certificates}/v1/certificatesigningrequests`, o);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized", message: expect.stringMatching(message) });
  });

  it.each([
    ["GET", "/apis/foo/v1/bars"],
    ["GET", "/nowhere"],
    ["GET", "/api/v2/namespaces"],
    ["DELETE", `/apis/${names.certificates}/v9/certificatesigningrequests/x`],
    ["PROPFIND", "/api/v1/namespaces"],
  ])("answers 401 without credentials to %s %s, a path nothing is served at", async (method, path) => {
    const r = await call(method, path);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ kind: "Status", apiVersion: "v1", status: "Failure", code: 401, reason: "Unauthorized" });
    // With credentials the same request reaches routing.
    expect((await call(method, path, { cert: true })).status).toBe(method === "PROPFIND" ? 405 : 404);
  });

  it("reads a 60 KB bearer token over HTTPS, answering a Status", async () => {
    const r = await call("GET", `/apis/${names.certificates}/v1/certificatesigningrequests`, { token: "t".repeat(60 * 1024) });
    expect(r.body).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized", message: expect.stringMatching(/Authorization header is above/) });
  });

  it("answers 401 without credentials to a malformed URL", async () => {
    const r = await call("GET", `/apis/${names.certificates}/v1/certificatesigningrequests/%zz`);
    expect(r.body).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });
    expect((await call("GET", `/apis/${names.certificates}/v1/certificatesigningrequests/%zz`, { cert: true })).body).toMatchObject({ kind: "Status", code: 400, reason: "BadRequest" });
  });

  it("answers 401, not 413, to an oversized body without credentials", async () => {
    const big = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "big", annotations: { a: "x".repeat(3 * 1024 * 1024) } } };
    const refused = await call("POST", "/api/v1/namespaces/default/serviceaccounts", { body: big });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ kind: "Status", code: 401, reason: "Unauthorized" });
    expect((await call("POST", "/api/v1/namespaces/default/serviceaccounts", { cert: true, body: big })).status).toBe(413);
  });

  it("authenticates a client certificate from the TLS handshake", async () => {
    const r = await call("POST", SSR, { cert: true, body: ssrBody, headers: { "audit-id": "by-certificate" } });
    expect(r.status).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "carol", groups: ["system:masters", "system:authenticated"] });
    expect(auditSink.byId("by-certificate")[0]!.annotations).toEqual({ "authentication.platform.io/authenticator": "x509" });
  });

  it("issues a ServiceAccount token that then authenticates with the bootstrap permissions", async () => {
    const sa = await call("POST", "/api/v1/namespaces/default/serviceaccounts", { token: "admin-token", body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "builder" } } });
    expect(sa.status).toBe(201);
    const issued = await call("POST", "/api/v1/namespaces/default/serviceaccounts/builder/token", { token: "admin-token", body: { apiVersion: `${names.authentication}/v1`, kind: "TokenRequest", spec: {} } });
    expect(issued.status).toBe(201);
    const token = issued.body.status.token as string;

    const me = await call("POST", SSR, { token, body: ssrBody });
    expect(me.body.status.userInfo).toMatchObject({ username: "system:serviceaccount:default:builder", uid: sa.body.metadata.uid });
    expect((await call("GET", `/apis/${names.certificates}/v1beta1/clustertrustbundles`, { token })).status).toBe(200);
    const csrs = await call("GET", `/apis/${names.certificates}/v1/certificatesigningrequests`, { token });
    expect(csrs.status).toBe(403);

    const review = await call("POST", `/apis/${names.authentication}/v1/tokenreviews`, { token: "admin-token", body: { apiVersion: `${names.authentication}/v1`, kind: "TokenReview", spec: { token } } });
    expect(review.body.status).toMatchObject({ authenticated: true, user: { username: "system:serviceaccount:default:builder" } });

    expect((await call("DELETE", "/api/v1/namespaces/default/serviceaccounts/builder", { token: "admin-token" })).status).toBe(200);
    // As upstream's token cache: the token stays authenticated for up to 10 s after its account is gone, then it is not.
    expect((await call("POST", SSR, { token, body: ssrBody })).status).toBe(201);
    await clock.advance(TOKEN_SUCCESS_CACHE_TTL_MS + 1);
    const after = await call("POST", SSR, { token, body: ssrBody });
    expect(after.status).toBe(401);
    expect(after.body.message).toMatch(/has been deleted/);
  });

  it("lets a privileged user impersonate and refuses one without the permission", async () => {
    const headers = { "impersonate-user": "jane", "impersonate-group": "devs" };
    const asJane = await call("POST", SSR, { token: "admin-token", body: ssrBody, headers });
    expect(asJane.body.status.userInfo).toEqual({ username: "jane", groups: ["devs", "system:authenticated"] });
    const refused = await call("POST", SSR, { token: "bob-token", body: ssrBody, headers });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope');
    // As upstream, the refused impersonation is audited as its sender's request, answered 403.
    const bobs = auditSink.events.filter((e) => e.user.username === "bob" && e.requestURI === SSR);
    expect(bobs.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(bobs[1]).toMatchObject({ verb: "create", objectRef: { resource: "selfsubjectreviews" }, responseStatus: { code: 403, reason: "Forbidden" } });
    expect(bobs[1]!.impersonatedUser).toBeUndefined();
    expect(bobs[1]!.annotations).toEqual({ "authentication.platform.io/authenticator": "token-file" });
    // The audit records who sent the request and whom it impersonated.
    const audited = auditSink.events.filter((e) => e.impersonatedUser?.username === "jane");
    expect(audited.map((e) => e.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    expect(audited[1]).toMatchObject({ user: { username: "admin" }, impersonatedUser: { username: "jane", groups: ["devs", "system:authenticated"] }, responseStatus: { code: 201 } });
    // RBAC's refusal is in the audit's authorization annotation, and its Status in responseStatus.
    const forbidden = await call("GET", "/api/v1/namespaces/default/secrets", { token: "bob-token", headers: { "audit-id": "bob-lists-secrets" } });
    expect(forbidden.status).toBe(403);
    const [event] = auditSink.events.filter((e) => e.auditID === "bob-lists-secrets" && e.stage === "ResponseComplete");
    expect(event).toMatchObject({ user: { username: "bob" }, verb: "list", objectRef: { resource: "secrets", namespace: "default" }, annotations: { "authorization.platform.io/decision": "forbid" }, responseStatus: { code: 403, reason: "Forbidden" } });
  });

  it("refuses an apiserver-client CSR for system:masters in admission, and records the requester otherwise", async () => {
    const body = (o: string[], name: string) => newCsrObject({ name, cn: "x", o, signerName: names.signers.apiserverClient, spec: { username: "forged" } });
    const path = `/apis/${names.certificates}/v1/certificatesigningrequests`;
    const refused = await call("POST", path, { token: "admin-token", body: await body(["system:masters"], "masters") });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/signer with the system:masters group is not allowed/);
    const created = await call("POST", path, { token: "admin-token", body: await body(["devs"], "devs") });
    expect(created.status).toBe(201);
    expect(created.body.spec).toMatchObject({ username: "admin", uid: "uid-admin", groups: ["system:masters", "system:authenticated"] });
  });

  it("audits a failed authentication as upstream: one ResponseStarted event, no user, the methods tried", async () => {
    expect((await call("GET", "/api/v1/namespaces", { token: "wrong-token", headers: { "audit-id": "bad-token" } })).status).toBe(401);
    expect((await call("GET", "/version", { headers: { "audit-id": "no-credentials" } })).status).toBe(401);
    const [bad, ...more] = auditSink.byId("bad-token");
    expect(more).toEqual([]);
    expect(bad).toMatchObject({ stage: "ResponseStarted", verb: "list", user: {}, objectRef: { resource: "namespaces", apiGroup: "" }, responseStatus: { code: 401, message: "Authentication failed, attempted: bearer" } });
    expect(bad!.user).toEqual({});
    expect(JSON.stringify(bad)).not.toContain("wrong-token");
    expect(auditSink.byId("no-credentials").map((e) => [e.stage, e.verb, e.responseStatus])).toEqual([["ResponseStarted", "get", { metadata: {}, message: "Authentication failed, no credentials provided", code: 401 }]]);
  });

  it("records the signer of an approval as an admission annotation, and the uid and resourceVersion approved", async () => {
    const path = `/apis/${names.certificates}/v1/certificatesigningrequests`;
    const created = await call("POST", path, { token: "admin-token", body: await newCsrObject({ name: "to-approve", cn: "x", signerName: names.signers.apiserverClient }) });
    expect(created.status).toBe(201);
    const approval = { ...created.body, status: { conditions: [{ type: "Approved", status: "True", reason: "Test", message: "approved" }] } };
    const approved = await call("PUT", `${path}/to-approve/approval`, { token: "admin-token", body: approval, headers: { "audit-id": "approve-1" } });
    expect(approved.status).toBe(200);
    const [, complete] = auditSink.byId("approve-1");
    expect(complete).toMatchObject({
      objectRef: { name: "to-approve", subresource: "approval", uid: created.body.metadata.uid, resourceVersion: created.body.metadata.resourceVersion },
      annotations: {
        "authentication.platform.io/authenticator": "token-file",
        "authorization.platform.io/decision": "allow",
        "certificateapproval.admission.platform.io/signer-name": names.signers.apiserverClient,
      },
    });
  });

  it("answers SubjectAccessReviews with the same authorizer", async () => {
    const r = await call("POST", `/apis/${names.authorization}/v1/subjectaccessreviews`, {
      token: "admin-token",
      body: { apiVersion: `${names.authorization}/v1`, kind: "SubjectAccessReview", spec: { user: "bob", groups: ["system:authenticated"], resourceAttributes: { verb: "list", group: names.certificates, resource: "clustertrustbundles" } } },
    });
    expect(r.body.status).toMatchObject({ allowed: true, reason: expect.stringMatching(/system:basic-user/) });
  });
});

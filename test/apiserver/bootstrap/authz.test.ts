// Authorization and admission of the secure server over HTTPS: each 403 names who, what and where, and a grant lifts it.
import { describe, expect, it } from "vitest";
import type { PolicyRule } from "../../../src/api/types/rbac.js";
import { csr, csrObject } from "../../fixtures/csr.js";
import { issueCert } from "../auth/fixtures.js";
import { TOKENS, useSecureFixture, type CallOptions, type Reply, type SecureFixture, whoAmI } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";

const fx = useSecureFixture();
const admin = { token: TOKENS.admin };
const csrs = (f: SecureFixture) => `/apis/${f.names.certificates}/v1/certificatesigningrequests`;

/** A client certificate of its own per user, so grants in one test do not leak into another. */
async function as(f: SecureFixture, user: string): Promise<CallOptions> {
  return { cert: await f.clientCert({ cn: user }) };
}

async function createCsr(f: SecureFixture, name: string, o: string[] = ["devs"]): Promise<Reply> {
  return f.call("POST", csrs(f), { ...admin, body: csrObject({ names: f.names, name, request: (await csr({ cn: name, o })).pem, signerName: f.names.signers.apiserverClient }) });
}

async function approved(f: SecureFixture, name: string): Promise<any> {
  const current = (await f.call("GET", `${csrs(f)}/${name}`, admin)).body;
  return { ...current, status: { conditions: [{ type: "Approved", status: "True", reason: "Test", message: "approved in a test" }] } };
}

function expectForbidden(r: Reply, message: string | RegExp): void {
  expect(r.status, r.text).toBe(403);
  expect(r.body).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
  if (typeof message === "string") expect(r.body.message).toBe(message);
  else expect(r.body.message).toMatch(message);
}

describe("RBAC misses answer 403 with upstream's text, and the grant lifts them", () => {
  const cert = (f: SecureFixture) => f.names.certificates;
  it.each([
    {
      what: "listing CSRs at the cluster scope",
      user: "lister",
      request: (f: SecureFixture): [string, string, unknown?] => ["GET", csrs(f)],
      message: (f: SecureFixture) => `certificatesigningrequests.${cert(f)} is forbidden: User "lister" cannot list resource "certificatesigningrequests" in API group "${cert(f)}" at the cluster scope`,
      rules: (f: SecureFixture): PolicyRule[] => [{ verbs: ["list"], apiGroups: [cert(f)], resources: ["certificatesigningrequests"] }],
      allowed: 200,
    },
    {
      what: "creating a ServiceAccount in a namespace",
      user: "creator",
      request: (): [string, string, unknown?] => ["POST", "/api/v1/namespaces/default/serviceaccounts", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "made-by-creator" } }],
      message: () => 'serviceaccounts is forbidden: User "creator" cannot create resource "serviceaccounts" in API group "" in the namespace "default"',
      rules: (): PolicyRule[] => [{ verbs: ["create"], apiGroups: [""], resources: ["serviceaccounts"] }],
      allowed: 201,
    },
    {
      what: "reading one named object",
      user: "reader",
      request: (): [string, string, unknown?] => ["GET", "/api/v1/namespaces/default/serviceaccounts/default-reader"],
      message: () => 'serviceaccounts "default-reader" is forbidden: User "reader" cannot get resource "serviceaccounts" in API group "" in the namespace "default"',
      rules: (): PolicyRule[] => [{ verbs: ["get"], apiGroups: [""], resources: ["serviceaccounts"], resourceNames: ["default-reader"] }],
      allowed: 200,
    },
    {
      what: "a path outside the discovery roles",
      user: "walker",
      request: (): [string, string, unknown?] => ["GET", "/"],
      message: () => 'forbidden: User "walker" cannot get path "/"',
      rules: (): PolicyRule[] => [{ verbs: ["get"], nonResourceURLs: ["/"] }],
      allowed: 200,
    },
  ])("refuses $what until it is granted", async ({ user, request, message, rules, allowed }) => {
    const f = fx();
    await f.call("POST", "/api/v1/namespaces/default/serviceaccounts", { ...admin, body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "default-reader" } } });
    const creds = await as(f, user);
    const [method, path, body] = request(f);
    expectForbidden(await f.call(method, path, { ...creds, body }), message(f));
    await f.grant(user, `grant-${user}`, rules(f));
    expect((await f.call(method, path, { ...creds, body })).status).toBe(allowed);
  });
});

describe("admission refuses what RBAC alone would allow (403), and the signer permission lifts it", () => {
  it("approving needs update on /approval, then approve on the signer", async () => {
    const f = fx();
    const c = f.names.certificates;
    await createCsr(f, "to-approve");
    const creds = await as(f, "approver");
    const put = () => approved(f, "to-approve").then((body) => f.call("PUT", `${csrs(f)}/to-approve/approval`, { ...creds, body }));
    expectForbidden(await put(), `certificatesigningrequests.${c} "to-approve" is forbidden: User "approver" cannot update resource "certificatesigningrequests/approval" in API group "${c}" at the cluster scope`);
    await f.grant("approver", "approver-update", [{ verbs: ["update"], apiGroups: [c], resources: ["certificatesigningrequests/approval"] }]);
    expectForbidden(await put(), `certificatesigningrequests.${c} "to-approve" is forbidden: user not permitted to approve requests with signerName "${f.names.signers.apiserverClient}"`);
    await f.grant("approver", "approver-approve", [{ verbs: ["approve"], apiGroups: [c], resources: ["signers"], resourceNames: [f.names.signers.apiserverClient] }]);
    const r = await put();
    expect(r.status, r.text).toBe(200);
    expect(r.body.status.conditions).toEqual([expect.objectContaining({ type: "Approved", status: "True" })]);
  });

  it("setting status.certificate needs update on /status, then sign on the signer", async () => {
    const f = fx();
    const c = f.names.certificates;
    await createCsr(f, "to-sign");
    expect((await f.call("PUT", `${csrs(f)}/to-sign/approval`, { ...admin, body: await approved(f, "to-sign") })).status).toBe(200);
    const issued = await issueCert({ cn: "to-sign" });
    const creds = await as(f, "signer");
    const put = async () => {
      const current = (await f.call("GET", `${csrs(f)}/to-sign`, admin)).body;
      return f.call("PUT", `${csrs(f)}/to-sign/status`, { ...creds, body: { ...current, status: { ...current.status, certificate: Buffer.from(issued.pem).toString("base64") } } });
    };
    expectForbidden(await put(), /User "signer" cannot update resource "certificatesigningrequests\/status"/);
    await f.grant("signer", "signer-status", [{ verbs: ["update"], apiGroups: [c], resources: ["certificatesigningrequests/status"] }]);
    expectForbidden(await put(), `certificatesigningrequests.${c} "to-sign" is forbidden: user not permitted to sign requests with signerName "${f.names.signers.apiserverClient}"`);
    await f.grant("signer", "signer-sign", [{ verbs: ["sign"], apiGroups: [c], resources: ["signers"], resourceNames: [`${f.names.suffix}/*`] }]);
    const r = await put();
    expect(r.status, r.text).toBe(200);
    expect(Buffer.from(r.body.status.certificate, "base64").toString()).toBe(issued.pem);
  });

  it("a ClusterTrustBundle naming a signer needs create, then attest on the signer", async () => {
    const f = fx();
    const c = f.names.certificates;
    const bundle = { apiVersion: `${c}/v1beta1`, kind: "ClusterTrustBundle", metadata: { name: "example.com:foo:one" }, spec: { signerName: "example.com/foo", trustBundle: (await testCa({ commonName: "bundle CA" })).certPem } };
    const creds = await as(f, "attester");
    const post = () => f.call("POST", `/apis/${c}/v1beta1/clustertrustbundles`, { ...creds, body: bundle });
    expectForbidden(await post(), `clustertrustbundles.${c} is forbidden: User "attester" cannot create resource "clustertrustbundles" in API group "${c}" at the cluster scope`);
    await f.grant("attester", "attester-create", [{ verbs: ["create"], apiGroups: [c], resources: ["clustertrustbundles"] }]);
    expectForbidden(await post(), `clustertrustbundles.${c} "example.com:foo:one" is forbidden: user not permitted to attest for signerName "example.com/foo"`);
    await f.grant("attester", "attester-attest", [{ verbs: ["attest"], apiGroups: [c], resources: ["signers"], resourceNames: ["example.com/foo"] }]);
    expect((await post()).status).toBe(201);
  });

  it.each([
    ["refuses", ["system:masters"], 403],
    ["accepts", ["devs"], 201],
  ])("%s an apiserver-client CSR for O=%j at create, even from system:masters", async (_verb, o, status) => {
    const f = fx();
    const r = await createCsr(f, `masters-${status}`, o as string[]);
    expect(r.status, r.text).toBe(status);
    if (status === 403) expect(r.body.message).toMatch(/use of the .*apiserver-client signer with the system:masters group is not allowed/);
  });
});

describe("CSR create records the requester", () => {
  it("overwrites forged spec.username, uid, groups and extra with the token user's", async () => {
    const f = fx();
    await f.grant("bob", "bob-creates-csrs", [{ verbs: ["create"], apiGroups: [f.names.certificates], resources: ["certificatesigningrequests"] }]);
    const forged = { username: "admin", uid: "uid-admin", groups: ["system:masters"], extra: { scopes: ["all"] } };
    const body = csrObject({ names: f.names, name: "from-bob", request: (await csr({ cn: "bob" })).pem, signerName: f.names.signers.apiserverClient, spec: forged });
    const r = await f.call("POST", csrs(f), { token: TOKENS.bob, body });
    expect(r.status, r.text).toBe(201);
    expect(r.body.spec).toMatchObject({ username: "bob", uid: "uid-bob", groups: ["devs", "system:authenticated"] });
    expect(r.body.spec.extra).toBeUndefined();
  });
});

describe("impersonation over HTTPS", () => {

  it("receives repeated Impersonate-Group headers as separate groups, commas kept", async () => {
    const f = fx();
    const headers = { "impersonate-user": "jane", "impersonate-group": ["team, with a comma", "ops"] };
    const r = await whoAmI(f, { ...admin, headers });
    expect(r.status, r.text).toBe(201);
    expect(r.body.status.userInfo).toEqual({ username: "jane", groups: ["team, with a comma", "ops", "system:authenticated"] });
  });

  it("reads impersonation header names in any case, and a request without them runs as its sender", async () => {
    const f = fx();
    const headers = { "IMPERSONATE-USER": "jane", "Impersonate-Extra-Scopes": "view" };
    const asJane = await whoAmI(f, { ...admin, headers });
    expect(asJane.status, asJane.text).toBe(201);
    expect(asJane.body.status.userInfo).toEqual({ username: "jane", groups: ["system:authenticated"], extra: { scopes: ["view"] } });
    const plain = await whoAmI(f, { ...admin, headers: { "x-impersonate-user": "jane" } });
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body.status.userInfo.username).not.toBe("jane");
  });

  it("refuses a user without the impersonate permission, naming the first refused dimension", async () => {
    const f = fx();
    const headers = { "impersonate-user": "system:serviceaccount:team1:robot" };
    const r = await whoAmI(f, { token: TOKENS.alice, headers });
    expectForbidden(r, 'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team1"');
  });
});

// Admission: the chain's order and attribute mapping, and both sides of every built-in plugin.
import { beforeAll, describe, expect, it } from "vitest";
import type { ApiObject, UserInfo } from "../../../src/api/meta.js";
import { AdmissionChain, admissionAttributes, type AdmissionAttributes, type AdmissionOperation } from "../../../src/apiserver/auth/admission.js";
import { defaultAdmissionPlugins } from "../../../src/apiserver/auth/admission-plugins.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { PlatformError } from "../../../src/errors.js";
import { csr, csrObject, type CsrObjectOptions } from "../../fixtures/csr.js";
import { clusterRole, clusterRoleBinding, names, rule, StaticLister, user, userSubject, admissionOutcome, refusal } from "./fixtures.js";
import type { Deadline } from "../../../src/apiserver/webhook/deadline.js";

const CERT = names.certificates;
const signers = (verb: string, resourceNames?: string[]) => rule({ apiGroups: [CERT], resources: ["signers"], verbs: [verb], ...(resourceNames && { resourceNames }) });
const authorizer = new RbacAuthorizer({
  names,
  lister: new StaticLister({
    clusterRoles: [
      clusterRole("approve-node", [signers("approve", [names.signers.nodeagentClient])]),
      clusterRole("approve-domain", [signers("approve", [`${names.suffix}/*`])]),
      clusterRole("sign-all", [signers("sign")]),
      clusterRole("attest-example", [signers("attest", ["example.com/foo"])]),
      clusterRole("revoke-domain", [signers("revoke", ["example.com/*"])]),
    ],
    clusterRoleBindings: [
      clusterRoleBinding("a", "approve-node", [userSubject("node-approver")]),
      clusterRoleBinding("b", "approve-domain", [userSubject("domain-approver")]),
      clusterRoleBinding("c", "sign-all", [userSubject("signer")]),
      clusterRoleBinding("d", "attest-example", [userSubject("attester")]),
      clusterRoleBinding("e", "revoke-domain", [userSubject("revoker")]),
    ],
  }),
});
const chain = new AdmissionChain({ names, authorizer, ...defaultAdmissionPlugins() });

let requestPlain = "";
let requestMasters = "";
beforeAll(async () => {
  requestPlain = (await csr({ cn: "carol", o: ["devs"] })).pem;
  requestMasters = (await csr({ cn: "carol", o: ["devs", "system:masters"] })).pem;
});

/** Carol's request req-1 for client auth, as the tests below vary it. */
const carolCsr = (o: CsrObjectOptions = {}): ApiObject => csrObject({ name: "req-1", request: requestPlain, usages: ["client auth"], ...o });

function bundle(signerName?: string, trustBundle = "PEM-1"): ApiObject {
  return { apiVersion: `${CERT}/v1beta1`, kind: "ClusterTrustBundle", metadata: { name: "b" }, spec: { trustBundle, ...(signerName !== undefined && { signerName }) } };
}

const attrs = (operation: AdmissionOperation, resource: string, who: UserInfo, subresource?: string): AdmissionAttributes => ({
  operation,
  group: CERT,
  resource,
  ...(subresource && { subresource }),
  name: resource === "clustertrustbundles" ? "b" : "req-1",
  user: who,
  dryRun: false,
});

const outcome = (a: AdmissionAttributes, obj: ApiObject | undefined, old?: ApiObject) => admissionOutcome(chain, a, obj, old);

describe("CSR requester plugin", () => {
  it("replaces requester fields the client sent with the authenticated user", async () => {
    const obj = carolCsr({ spec: { username: "system:admin", groups: ["system:masters"], uid: "forged", extra: { x: ["y"] } } });
    const who = user({ username: "carol", uid: "uid-c", groups: ["devs", "system:authenticated"], extra: { scopes: ["a"] } });
    expect(await outcome(attrs("CREATE", "certificatesigningrequests", who), obj)).toBe("allowed");
    expect(obj.spec).toMatchObject({ username: "carol", uid: "uid-c", groups: ["devs", "system:authenticated"], extra: { scopes: ["a"] } });
  });

  it("drops forged fields the requester does not have", async () => {
    const obj = carolCsr({ spec: { uid: "forged", extra: { x: ["y"] } } });
    await chain.admit(attrs("CREATE", "certificatesigningrequests", { username: "carol" }), obj, undefined);
    expect(obj.spec).not.toHaveProperty("uid");
    expect(obj.spec).not.toHaveProperty("extra");
    expect(obj.spec).not.toHaveProperty("groups");
  });

  it("leaves updates and other resources alone", async () => {
    const obj = carolCsr({ spec: { username: "original" } });
    await chain.admit(attrs("UPDATE", "certificatesigningrequests", user()), obj, carolCsr());
    expect(obj.spec).toHaveProperty("username", "original");
  });
});

describe("CSR subject restriction plugin", () => {
  it.each([
    ["an apiserver-client request for system:masters", names.signers.apiserverClient, () => requestMasters, `FORBIDDEN: certificatesigningrequests.${CERT} "req-1" is forbidden: use of the ${names.signers.apiserverClient} signer with the system:masters group is not allowed`],
    ["an apiserver-client request for other groups", names.signers.apiserverClient, () => requestPlain, "allowed"],
    ["a system:masters request to another signer", "example.com/custom", () => requestMasters, "allowed"],
    ["an unparseable request (left to validation)", names.signers.apiserverClient, () => "bm90IGEgY3Ny", "allowed"],
  ])("answers %s", async (_name, signerName, request, expected) => {
    expect(await outcome(attrs("CREATE", "certificatesigningrequests", user()), carolCsr({ signerName, request: request() }))).toBe(expected);
  });
});

describe("CSR approval plugin", () => {
  const approve = (who: string, signerName = names.signers.nodeagentClient) =>
    outcome(attrs("UPDATE", "certificatesigningrequests", user({ username: who }), "approval"), carolCsr({ signerName, conditions: [{ type: "Approved", status: "True" }] }), carolCsr({ signerName }));

  it.each([
    ["a user with approve on the signer name", "node-approver", names.signers.nodeagentClient, "allowed"],
    ["a user with approve on <domain>/*", "domain-approver", names.signers.apiserverClient, "allowed"],
    ["a user with approve on another signer", "node-approver", names.signers.apiserverClient, `FORBIDDEN: certificatesigningrequests.${CERT} "req-1" is forbidden: user not permitted to approve requests with signerName "${names.signers.apiserverClient}"`],
    ["a user without approve", "signer", names.signers.nodeagentClient, `FORBIDDEN: certificatesigningrequests.${CERT} "req-1" is forbidden: user not permitted to approve requests with signerName "${names.signers.nodeagentClient}"`],
    ["<domain>/* for a signer of another domain", "domain-approver", "example.com/foo", `FORBIDDEN: certificatesigningrequests.${CERT} "req-1" is forbidden: user not permitted to approve requests with signerName "example.com/foo"`],
  ])("answers %s", async (_name, who, signerName, expected) => {
    expect(await approve(who, signerName)).toBe(expected);
  });

  it("does not apply to updates of the main resource", async () => {
    expect(await outcome(attrs("UPDATE", "certificatesigningrequests", user()), carolCsr(), carolCsr())).toBe("allowed");
  });
});

describe("CSR signing plugin", () => {
  const status = (who: string, next: ApiObject, old: ApiObject) => outcome(attrs("UPDATE", "certificatesigningrequests", user({ username: who }), "status"), next, old);

  it.each([
    ["setting a certificate with sign", "signer", carolCsr({ certificate: "Q0VSVA==" }), carolCsr(), "allowed"],
    ["setting a certificate without sign", "node-approver", carolCsr({ certificate: "Q0VSVA==" }), carolCsr(), /user not permitted to sign requests with signerName/],
    ["changing a certificate without sign", "node-approver", carolCsr({ certificate: "TkVX" }), carolCsr({ certificate: "Q0VSVA==" }), /user not permitted to sign/],
    ["adding a Failed condition without sign", "node-approver", carolCsr({ conditions: [{ type: "Failed", status: "True" }] }), carolCsr(), "allowed"],
  ])("answers %s", async (_name, who, next, old, expected) => {
    const r = await status(who, next, old);
    if (typeof expected === "string") expect(r).toBe(expected);
    else expect(r).toMatch(expected);
  });
});

describe("ClusterTrustBundle attest plugin", () => {
  const write = (op: AdmissionOperation, who: string, next: ApiObject, old?: ApiObject) => outcome(attrs(op, "clustertrustbundles", user({ username: who })), next, old);

  it.each([
    ["creating a signer bundle with attest", "CREATE", "attester", bundle("example.com/foo"), undefined, "allowed"],
    ["creating a signer bundle without attest", "CREATE", "signer", bundle("example.com/foo"), undefined, `FORBIDDEN: clustertrustbundles.${CERT} "b" is forbidden: user not permitted to attest for signerName "example.com/foo"`],
    ["creating a bundle for another signer", "CREATE", "attester", bundle("example.com/bar"), undefined, /not permitted to attest for signerName "example.com\/bar"/],
    ["creating a bundle without a signer", "CREATE", "signer", bundle(), undefined, "allowed"],
    ["an update that keeps signer and anchors", "UPDATE", "signer", bundle("example.com/foo"), bundle("example.com/foo"), "allowed"],
    ["an update that changes the anchors", "UPDATE", "signer", bundle("example.com/foo", "PEM-2"), bundle("example.com/foo"), /not permitted to attest/],
    ["an update that adds a signer", "UPDATE", "signer", bundle("example.com/foo"), bundle(), /not permitted to attest/],
  ] as const)("answers %s", async (_name, op, who, next, old, expected) => {
    const r = await write(op, who, next, old);
    if (typeof expected === "string") expect(r).toBe(expected);
    else expect(r).toMatch(expected);
  });
});

describe("CertificateRevocation plugin: revocation by serial", () => {
  const revocation = (signerName: string): ApiObject => ({
    apiVersion: `${CERT}/v1`,
    kind: "CertificateRevocation",
    metadata: { name: "req-1" },
    spec: { signerName, serialNumber: "0a", reason: "keyCompromise" },
  });
  const create = (who: string, signerName: string) => outcome(attrs("CREATE", "certificaterevocations", user({ username: who })), revocation(signerName));

  it.each([
    ["revoke on <domain>/*", "revoker", "example.com/foo", "allowed"],
    ["revoke for another domain", "revoker", "other.example/foo", `FORBIDDEN: certificaterevocations.${CERT} "req-1" is forbidden: user not permitted to revoke certificates of signerName "other.example/foo"`],
    ["no revoke at all (sign only)", "signer", "example.com/foo", /not permitted to revoke certificates of signerName "example.com\/foo"/],
  ] as const)("answers a create with %s", async (_name, who, signerName, expected) => {
    const r = await create(who, signerName);
    if (typeof expected === "string") expect(r).toBe(expected);
    else expect(r).toMatch(expected);
  });

  it("leaves other operations on certificaterevocations to RBAC (delete ends a revocation)", async () => {
    expect(await outcome(attrs("DELETE", "certificaterevocations", user({ username: "signer" })), undefined, revocation("example.com/foo"))).toBe("allowed");
  });
});

describe("AdmissionChain", () => {
  it("runs mutating plugins before validating ones and stops at the first refusal", async () => {
    const seen: string[] = [];
    const c = new AdmissionChain({
      names,
      authorizer,
      validating: [
        { name: "v1", admit: () => void seen.push("v1") },
        { name: "v2", admit: () => { seen.push("v2"); throw new PlatformError("FORBIDDEN", "no"); } },
        { name: "v3", admit: () => void seen.push("v3") },
      ],
      mutating: [{ name: "m1", admit: (_a, obj) => { seen.push(`m1:${obj?.metadata.name}`); } }],
    });
    expect(() => c.admit(attrs("CREATE", "things", user()), bundle(), undefined)).toThrow("no");
    expect(seen).toEqual(["m1:b", "v1", "v2"]);
  });

  it("wraps a plain error from a plugin into a PlatformError, thrown at once or rejected after a plugin that waited", async () => {
    const bad = { name: "bad", admit: () => { throw new Error("boom"); } };
    const c = new AdmissionChain({ names, authorizer, validating: [bad] });
    expect(() => c.admit(attrs("CREATE", "things", user()), bundle(), undefined)).toThrow(expect.objectContaining({ code: "INTERNAL" }));
    const waited = new AdmissionChain({ names, authorizer, validating: [{ name: "slow", admit: () => new Promise<void>((r) => setTimeout(r, 1)) }, bad] });
    const err = await refusal(waited.admit(attrs("CREATE", "things", user()), bundle(), undefined));
    expect(err).toBeInstanceOf(PlatformError);
    expect(err.code).toBe("INTERNAL");
  });

  it("answers at once, without a promise, when no plugin has to wait; waits from the first that does, in order", async () => {
    const seen: string[] = [];
    const now = (name: string) => ({ name, admit: () => void seen.push(name) });
    const later = (name: string) => ({ name, admit: async () => void seen.push(name) });
    const chain = (validating: { name: string; admit: () => void | Promise<void> }[]) => new AdmissionChain({ names, authorizer, mutating: [now("m")], validating });
    expect(chain([now("a"), now("b")]).admit(attrs("CREATE", "things", user()), bundle(), undefined)).toBeUndefined();
    expect(seen).toEqual(["m", "a", "b"]);
    seen.length = 0;
    const pending = chain([now("a"), later("b"), now("c"), later("d")]).admit(attrs("CREATE", "things", user()), bundle(), undefined);
    expect(pending).toBeInstanceOf(Promise);
    // Nothing after the first plugin that waits runs before it is done.
    expect(seen).toEqual(["m", "a", "b"]);
    await pending;
    expect(seen).toEqual(["m", "a", "b", "c", "d"]);
  });

  it.each([
    ["create", "CREATE"],
    ["update", "UPDATE"],
    ["patch", "UPDATE"],
    ["delete", "DELETE"],
    ["connect", "CONNECT"],
  ])("maps the pipeline verb %s to %s", (verb, operation) => {
    const a = admissionAttributes({ user: user(), verb, group: CERT, resource: "certificatesigningrequests", subresource: "approval", name: "x", dryRun: true });
    expect(a).toEqual({ operation, group: CERT, resource: "certificatesigningrequests", subresource: "approval", name: "x", user: user(), dryRun: true });
  });

  it("carries the request's deadline to admission, and from there to the signer checks it asks the authorizer", async () => {
    const deadline = { signal: new AbortController().signal };
    const a = admissionAttributes({ user: user(), verb: "update", group: CERT, resource: "certificatesigningrequests", subresource: "approval", name: "req-1", deadline });
    expect(a.deadline).toBe(deadline);
    const asked: (Deadline | undefined)[] = [];
    const spy = new AdmissionChain({ names, authorizer: { authorize: (q) => (asked.push(q.deadline), authorizer.authorize(q)) }, ...defaultAdmissionPlugins() });
    const who = user({ username: "domain-approver" });
    await spy.admit({ ...attrs("UPDATE", "certificatesigningrequests", who, "approval"), deadline }, carolCsr({ signerName: `${names.suffix}/x`, conditions: [{ type: "Approved", status: "True" }] }), carolCsr({ signerName: `${names.suffix}/x` }));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.every((d) => d === deadline)).toBe(true);
  });

  it("refuses a verb that is not a write", () => {
    expect(() => admissionAttributes({ user: user(), verb: "get" })).toThrow('admission has no operation for the verb "get"');
  });
});

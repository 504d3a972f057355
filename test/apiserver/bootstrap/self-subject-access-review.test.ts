// SelfSubjectAccessReview over HTTPS: "may I?" answered by RBAC for the caller (impersonation applied), never for whom the
// body names; every authenticated user may ask; listed in discovery; a protobuf body as kubectl sends it.
import { describe, expect, it } from "vitest";
import { serverFixture } from "../fixtures.js";
import { bytes, envelope, message, objectMeta } from "../http/protobuf-encoder.js";
import { TOKENS, useSecureFixture, type CallOptions, type SecureFixture } from "./fixtures.js";

const fx = useSecureFixture();
const admin = { token: TOKENS.admin };
const alice = { token: TOKENS.alice };
const path = (f: SecureFixture) => `/apis/${f.names.authorization}/v1/selfsubjectaccessreviews`;
const body = (f: SecureFixture, spec: Record<string, unknown>) => ({ apiVersion: `${f.names.authorization}/v1`, kind: "SelfSubjectAccessReview", spec });
const onCsrs = (f: SecureFixture, verb: string) => ({ resourceAttributes: { verb, group: f.names.certificates, resource: "certificatesigningrequests" } });

async function ask(f: SecureFixture, who: CallOptions, spec: Record<string, unknown>): Promise<{ allowed: boolean; reason?: string }> {
  const r = await f.call("POST", path(f), { ...who, body: body(f, spec) });
  expect(r.status, r.text).toBe(201);
  expect(r.body).toMatchObject({ kind: "SelfSubjectAccessReview", spec });
  return r.body.status;
}

describe("SelfSubjectAccessReview on the secure server", () => {
  it("says yes to the administrator (system:masters)", async () => {
    const f = fx();
    expect(await ask(f, admin, onCsrs(f, "delete"))).toEqual({ allowed: true, reason: 'member of the privileged group "system:masters"' });
  });

  it("answers a user bound to read CSRs: yes for get, no for delete, and for the bootstrap non-resource paths", async () => {
    const f = fx();
    expect(await ask(f, alice, onCsrs(f, "get"))).toEqual({ allowed: false });
    await f.grant("alice", "alice-reads-csrs", [{ verbs: ["get", "list", "watch"], apiGroups: [f.names.certificates], resources: ["certificatesigningrequests"] }]);
    expect(await ask(f, alice, onCsrs(f, "get"))).toEqual({ allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "alice-reads-csrs" of ClusterRole "alice-reads-csrs" to User "alice"' });
    expect(await ask(f, alice, { resourceAttributes: { ...onCsrs(f, "list").resourceAttributes, namespace: "default" } })).toMatchObject({ allowed: true });
    expect(await ask(f, alice, onCsrs(f, "delete"))).toEqual({ allowed: false });
    expect(await ask(f, alice, { resourceAttributes: { ...onCsrs(f, "update").resourceAttributes, subresource: "approval", name: "x" } })).toEqual({ allowed: false });
    expect(await ask(f, alice, { nonResourceAttributes: { verb: "get", path: "/healthz" } })).toMatchObject({ allowed: true });
    expect(await ask(f, alice, { nonResourceAttributes: { verb: "get", path: "/metrics" } })).toEqual({ allowed: false });
  });

  it("answers for the caller, not for a user or groups the body names", async () => {
    const f = fx();
    const r = await f.call("POST", path(f), { ...alice, body: body(f, { ...onCsrs(f, "delete"), user: "admin", groups: ["system:masters"] }) });
    expect(r.body?.status?.allowed, r.text).toBe(false);
  });

  it("answers for the impersonated user", async () => {
    const f = fx();
    const asBob = { ...admin, headers: { "impersonate-user": "bob" } };
    expect(await ask(f, asBob, onCsrs(f, "delete"))).toEqual({ allowed: false });
    expect(await ask(f, { ...admin, headers: { "impersonate-user": "bob", "impersonate-group": "system:masters" } }, onCsrs(f, "delete"))).toMatchObject({ allowed: true });
  });

  it.each([
    ["both kinds of attributes", (f: SecureFixture) => ({ ...onCsrs(f, "get"), nonResourceAttributes: { verb: "get", path: "/" } }), "spec.nonResourceAttributes"],
    ["no attributes", () => ({}), "spec.resourceAttributes"],
  ])("refuses a spec with %s (422)", async (_name, spec, field) => {
    const f = fx();
    const r = await f.call("POST", path(f), { ...alice, body: body(f, spec(f)) });
    expect(r.status, r.text).toBe(422);
    expect(r.body.details.causes.map((c: { field: string }) => c.field)).toEqual([field]);
  });

  it("is served create-only and cluster-scoped in discovery", async () => {
    const f = fx();
    const r = await f.call("GET", `/apis/${f.names.authorization}/v1`, alice);
    expect(r.body.resources).toContainEqual(expect.objectContaining({ name: "selfsubjectaccessreviews", kind: "SelfSubjectAccessReview", namespaced: false, verbs: ["create"] }));
    expect((await f.call("GET", path(f), alice)).status).toBe(405);
  });

  it("takes the protobuf body kubectl auth can-i sends", async () => {
    const f = fx();
    const attributes = message(1, bytes(1, "default"), bytes(2, "delete"), bytes(3, f.names.certificates), bytes(4, ""), bytes(5, "certificatesigningrequests"), bytes(6, ""), bytes(7, ""));
    const pb = envelope(`${f.names.authorization}/v1`, "SelfSubjectAccessReview", objectMeta(""), message(2, attributes), message(3));
    const r = await f.call("POST", path(f), { ...admin, body: pb, contentType: "application/vnd.kubernetes.protobuf" });
    expect(r.status, r.text).toBe(201);
    expect(r.body.spec.resourceAttributes).toMatchObject({ namespace: "default", verb: "delete", resource: "certificatesigningrequests" });
    expect(r.body.status.allowed).toBe(true);
  });
});

describe("SelfSubjectAccessReview without authorization (insecure-local)", () => {
  it("says yes, as everything is allowed", async () => {
    const server = await serverFixture();
    try {
      const res = await fetch(`${server.address}/apis/${server.names.authorization}/v1/selfsubjectaccessreviews`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ apiVersion: `${server.names.authorization}/v1`, kind: "SelfSubjectAccessReview", spec: { nonResourceAttributes: { verb: "get", path: "/metrics" } } }),
      });
      expect(res.status).toBe(201);
      expect((await res.json()).status).toEqual({ allowed: true });
    } finally {
      await server.stop();
    }
  });
});

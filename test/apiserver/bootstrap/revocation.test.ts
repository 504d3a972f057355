// Revocation over HTTPS: /revocation needs `revoke` on the signer; bad input is refused with nothing changed.
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { revocationIdOf } from "../../../src/pki/revocation-id.js";
import { decodePem } from "../../../src/pki/pem.js";
import { csr } from "../../fixtures/csr.js";
import { TOKENS, useSecureFixture, type Reply, type SecureFixture } from "./fixtures.js";
import { csrObject } from "../../fixtures/csr.js";

const fx = useSecureFixture();
const admin = { token: TOKENS.admin };
const csrs = (f: SecureFixture) => `/apis/${f.names.certificates}/v1/certificatesigningrequests`;

function ok(r: Reply, status = 200): any {
  expect(r.status, r.text).toBe(status);
  return r.body;
}

/** A CSR for `cn`, approved, and issued a client certificate by the cluster CA (what the signing controller would do). */
async function issued(f: SecureFixture, name: string, cn = name): Promise<{ pem: string; keyPem: string }> {
  ok(await f.call("POST", csrs(f), { ...admin, body: csrObject({ names: f.names, name, request: (await csr({ cn })).pem, signerName: f.names.signers.apiserverClient }) }), 201);
  const current = ok(await f.call("GET", `${csrs(f)}/${name}`, admin));
  const approved = ok(await f.call("PUT", `${csrs(f)}/${name}/approval`, { ...admin, body: { ...current, status: { conditions: [{ type: "Approved", status: "True", reason: "Test" }] } } }));
  const cert = await f.clientCert({ cn });
  approved.status.certificate = Buffer.from(cert.pem).toString("base64");
  ok(await f.call("PUT", `${csrs(f)}/${name}/status`, { ...admin, body: approved }));
  return cert;
}

async function revoke(f: SecureFixture, name: string, reason: string, creds: object = admin, message?: string): Promise<Reply> {
  const current = (await f.call("GET", `${csrs(f)}/${name}`, admin)).body;
  const conditions = [...(current.status?.conditions ?? []), { type: "Revoked", status: "True", reason, ...(message && { message }) }];
  return f.call("PUT", `${csrs(f)}/${name}/revocation`, { ...creds, body: { ...current, status: { ...current.status, conditions } } });
}

const revokedOf = (obj: any) => obj.status.conditions.find((c: any) => c.type === "Revoked");

describe("certificatesigningrequests/{name}/revocation", () => {
  it("revokes an issued certificate with its reason, records the serial, and shows in the table's condition", async () => {
    const f = fx();
    const cert = await issued(f, "rev-ok");
    const body = ok(await revoke(f, "rev-ok", "keyCompromise", admin, "laptop stolen"));
    const serial = revocationIdOf(decodePem(cert.pem)[0]!.der).serialHex;
    expect(revokedOf(body)).toMatchObject({ status: "True", reason: "keyCompromise", message: `serial ${serial}: laptop stolen` });
    expect(revokedOf(body).lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    const table = ok(await f.call("GET", `${csrs(f)}/rev-ok`, { ...admin, headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } }));
    expect(table.rows[0].cells[5]).toBe("Approved,Issued,Revoked");
  });

  it("refuses revoking twice with 409, an unknown reason and a never-issued request with 422, an unknown CSR with 404", async () => {
    const f = fx();
    await issued(f, "rev-twice");
    ok(await revoke(f, "rev-twice", "superseded"));
    const before = ok(await f.call("GET", `${csrs(f)}/rev-twice`, admin));
    const twice = await revoke(f, "rev-twice", "keyCompromise");
    expect(twice.status, twice.text).toBe(409);
    expect(twice.body).toMatchObject({ kind: "Status", reason: "Conflict" });
    expect(twice.body.message).toMatch(/"rev-twice" is already revoked \(superseded at /);
    expect(ok(await f.call("GET", `${csrs(f)}/rev-twice`, admin)).metadata.resourceVersion).toBe(before.metadata.resourceVersion);

    await issued(f, "rev-reason");
    const unknown = await revoke(f, "rev-reason", "certificateHold");
    expect(unknown.status, unknown.text).toBe(422);
    expect(unknown.body.details.causes[0]).toMatchObject({ field: "status.conditions[1].reason", reason: "FieldValueNotSupported" });
    expect(unknown.body.message).toContain('"keyCompromise"');
    expect(revokedOf(ok(await f.call("GET", `${csrs(f)}/rev-reason`, admin)))).toBeUndefined();

    ok(await f.call("POST", csrs(f), { ...admin, body: csrObject({ names: f.names, name: "rev-pending", request: (await csr({ cn: "p" })).pem, signerName: f.names.signers.apiserverClient }) }), 201);
    const pending = await revoke(f, "rev-pending", "keyCompromise");
    expect(pending.status, pending.text).toBe(422);
    expect(pending.body.message).toContain("only a request with an issued certificate can be revoked");

    const missing = await f.call("PUT", `${csrs(f)}/rev-none/revocation`, { ...admin, body: { ...before, metadata: { name: "rev-none" } } });
    expect(missing.status, missing.text).toBe(404);
  });

  it("cannot be bypassed: /status and /approval may not add Revoked", async () => {
    const f = fx();
    await issued(f, "rev-bypass");
    const current = ok(await f.call("GET", `${csrs(f)}/rev-bypass`, admin));
    const body = { ...current, status: { ...current.status, conditions: [...current.status.conditions, { type: "Revoked", status: "True", reason: "keyCompromise" }] } };
    for (const sub of ["status", "approval"]) {
      const r = await f.call("PUT", `${csrs(f)}/rev-bypass/${sub}`, { ...admin, body });
      expect(r.status, r.text).toBe(422);
      expect(r.body.message).toContain('updates may not add a condition of type "Revoked"');
    }
  });

  it("needs update on /revocation, then revoke on the signer (403 until both are granted)", async () => {
    const f = fx();
    const c = f.names.certificates;
    await issued(f, "rev-authz");
    const creds = { cert: await f.clientCert({ cn: "revoker" }) };
    const first = await revoke(f, "rev-authz", "keyCompromise", creds);
    expect(first.status, first.text).toBe(403);
    await f.grant("revoker", "revoker-update", [{ verbs: ["update"], apiGroups: [c], resources: ["certificatesigningrequests/revocation"] }]);
    const second = await revoke(f, "rev-authz", "keyCompromise", creds);
    expect(second.status, second.text).toBe(403);
    expect(second.body.message).toBe(`certificatesigningrequests.${c} "rev-authz" is forbidden: user not permitted to revoke certificates of signerName "${f.names.signers.apiserverClient}"`);
    await f.grant("revoker", "revoker-revoke", [{ verbs: ["revoke"], apiGroups: [c], resources: ["signers"], resourceNames: [f.names.signers.apiserverClient] }]);
    expect(revokedOf(ok(await revoke(f, "rev-authz", "keyCompromise", creds)))).toMatchObject({ reason: "keyCompromise" });
  });
});

describe("the client-certificate authenticator refuses revoked certificates", () => {
  it("refuses alice's revoked certificate with 401 and the reason at the next request, while bob's still works", async () => {
    const f = fx();
    const alice = await issued(f, "enforce-alice", "alice");
    const bob = await issued(f, "enforce-bob", "bob");
    // Twice: the second request is answered from the authenticator's per-chain verdict cache.
    for (let i = 0; i < 2; i++) expect((await f.call("GET", "/version", { cert: alice })).status).toBe(200);
    ok(await revoke(f, "enforce-alice", "keyCompromise"));
    const refused = await f.call("GET", "/version", { cert: alice });
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body.message).toBe("Unauthorized: x509: certificate has been revoked (keyCompromise; CertificateSigningRequest enforce-alice)");
    expect((await f.call("GET", "/version", { cert: bob })).status).toBe(200);
  });
});

// Revocation by serial over HTTPS: CertificateRevocation needs `revoke` on the signer, refuses bad input with nothing
// stored, and the client-certificate authenticator refuses the serial at the next request.
import { describe, expect, it } from "vitest";
import { revocationIdOf } from "../../../src/pki/revocation-id.js";
import { decodePem } from "../../../src/pki/pem.js";
import { TOKENS, useSecureFixture, type Reply, type SecureFixture } from "./fixtures.js";

const fx = useSecureFixture();
const admin = { token: TOKENS.admin };
const path = (f: SecureFixture) => `/apis/${f.names.certificates}/v1/certificaterevocations`;
const nameOf = (f: SecureFixture, serial: string) => `${f.names.signers.apiserverClient.replaceAll("/", ":")}:${serial}`;

function revocation(f: SecureFixture, serialNumber: string, reason = "keyCompromise", name = nameOf(f, serialNumber.toLowerCase().replaceAll(":", ""))) {
  return { apiVersion: `${f.names.certificates}/v1`, kind: "CertificateRevocation", metadata: { name }, spec: { signerName: f.names.signers.apiserverClient, serialNumber, reason } };
}

const create = (f: SecureFixture, body: object, creds: object = admin): Promise<Reply> => f.call("POST", path(f), { ...creds, body });

describe("certificaterevocations", () => {
  it("stores the serial lower-case without separators, and prints Signer, Serial, Reason and Age", async () => {
    const f = fx();
    const r = await create(f, revocation(f, "5F:0C:1A", "superseded", nameOf(f, "5f0c1a")));
    expect(r.status, r.text).toBe(201);
    expect(r.body.spec).toEqual({ signerName: f.names.signers.apiserverClient, serialNumber: "5f0c1a", reason: "superseded" });
    const table = (await f.call("GET", `${path(f)}/${nameOf(f, "5f0c1a")}`, { ...admin, headers: { accept: "application/json;as=Table;v=v1;g=meta.k8s.io" } })).body;
    expect(table.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Name", "Signer", "Serial", "Reason", "Age"]);
    expect(table.rows[0].cells.slice(0, 4)).toEqual([nameOf(f, "5f0c1a"), f.names.signers.apiserverClient, "5f0c1a", "superseded"]);
  });

  it("refuses bad hex and an unknown reason with 422 naming the field, a wrong name with 422, a second revocation with 409", async () => {
    const f = fx();
    const hex = await create(f, revocation(f, "5g", "keyCompromise", nameOf(f, "5g")));
    expect(hex.status, hex.text).toBe(422);
    expect(hex.body.details.causes).toEqual([expect.objectContaining({ field: "spec.serialNumber", reason: "FieldValueInvalid" })]);
    const reason = await create(f, revocation(f, "0a", "certificateHold"));
    expect(reason.status, reason.text).toBe(422);
    expect(reason.body.details.causes).toEqual([expect.objectContaining({ field: "spec.reason", reason: "FieldValueNotSupported" })]);
    const wrongName = await create(f, revocation(f, "0a", "keyCompromise", nameOf(f, "0b")));
    expect(wrongName.status, wrongName.text).toBe(422);
    expect(wrongName.body.details.causes[0]).toMatchObject({ field: "metadata.name" });
    expect(wrongName.body.message).toContain(`must be named ${nameOf(f, "0a")}`);
    expect((await f.call("GET", `${path(f)}/${nameOf(f, "0a")}`, admin)).status).toBe(404);

    expect((await create(f, revocation(f, "0a", "superseded"))).status).toBe(201);
    const twice = await create(f, revocation(f, "0A", "keyCompromise", nameOf(f, "0a")));
    expect(twice.status, twice.text).toBe(409);
    expect(twice.body.reason).toBe("AlreadyExists");
    const stored = (await f.call("GET", `${path(f)}/${nameOf(f, "0a")}`, admin)).body;
    expect(stored.spec.reason).toBe("superseded");
    const change = await f.call("PUT", `${path(f)}/${nameOf(f, "0a")}`, { ...admin, body: { ...stored, spec: { ...stored.spec, reason: "keyCompromise" } } });
    expect(change.status, change.text).toBe(422);
    expect(change.body.details.causes[0]).toMatchObject({ field: "spec.reason", reason: "FieldValueInvalid" });
  });

  it("needs create on certificaterevocations, then revoke on the signer (403 until both are granted)", async () => {
    const f = fx();
    const c = f.names.certificates;
    const creds = { cert: await f.clientCert({ cn: "serial-revoker" }) };
    expect((await create(f, revocation(f, "0c"), creds)).status).toBe(403);
    await f.grant("serial-revoker", "serial-revoker-create", [{ verbs: ["create"], apiGroups: [c], resources: ["certificaterevocations"] }]);
    const second = await create(f, revocation(f, "0c"), creds);
    expect(second.status, second.text).toBe(403);
    expect(second.body.message).toBe(`certificaterevocations.${c} "${nameOf(f, "0c")}" is forbidden: user not permitted to revoke certificates of signerName "${f.names.signers.apiserverClient}"`);
    await f.grant("serial-revoker", "serial-revoker-revoke", [{ verbs: ["revoke"], apiGroups: [c], resources: ["signers"], resourceNames: [f.names.signers.apiserverClient] }]);
    expect((await create(f, revocation(f, "0c"), creds)).status).toBe(201);
  });

  it("the authenticator refuses a certificate revoked by serial with 401 and the reason, until the revocation is deleted", async () => {
    const f = fx();
    const alice = await f.clientCert({ cn: "alice" });
    const bob = await f.clientCert({ cn: "bob" });
    for (let i = 0; i < 2; i++) expect((await f.call("GET", "/version", { cert: alice })).status).toBe(200);
    const serial = revocationIdOf(decodePem(alice.pem)[0]!.der).serialHex;
    expect((await create(f, revocation(f, serial))).status).toBe(201);
    const refused = await f.call("GET", "/version", { cert: alice });
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body.message).toBe(`Unauthorized: x509: certificate has been revoked (keyCompromise; CertificateRevocation ${nameOf(f, serial.toLowerCase())})`);
    expect((await f.call("GET", "/version", { cert: bob })).status).toBe(200);
    expect((await f.call("DELETE", `${path(f)}/${nameOf(f, serial.toLowerCase())}`, admin)).status).toBe(200);
    expect((await f.call("GET", "/version", { cert: alice })).status).toBe(200);
  });
});

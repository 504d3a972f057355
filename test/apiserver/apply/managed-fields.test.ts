// managedFields of every write through the registry: create, update, patch, subresources, no-op writes, removed fields.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { serviceAccount } from "../../fixtures/objects.js";
import { registryFixture } from "../fixtures.js";

const fieldsOf = (o: ApiObject) => Object.fromEntries((o.metadata.managedFields ?? []).map((e) => [`${e.manager}/${e.operation}${e.subresource ? `/${e.subresource}` : ""}`, e.fieldsV1]));

describe("managedFields of updates", () => {
  it("records what each writer added or changed, and takes a changed field from its previous owner", async () => {
    const { store, clock } = await registryFixture();
    const sa = store("ServiceAccount");
    const created = (await sa.create("default", serviceAccount({ labels: { app: "a" }, automount: false }), { fieldManager: "creator" })).object;
    expect(fieldsOf(created)).toEqual({ "creator/Update": { "f:automountServiceAccountToken": {}, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } } });
    clock.advance(5_000);
    const body = structuredClone(created);
    body.metadata.labels = { app: "a", tier: "web" };
    body.automountServiceAccountToken = true;
    const updated = (await sa.update("default", "builder", body, { fieldManager: "editor" })).object;
    expect(fieldsOf(updated)).toEqual({
      "creator/Update": { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } },
      "editor/Update": { "f:automountServiceAccountToken": {}, "f:metadata": { "f:labels": { "f:tier": {} } } },
    });
    const editor = updated.metadata.managedFields!.find((e) => e.manager === "editor")!;
    expect(editor.time).toBe(new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"));
    expect(editor.apiVersion).toBe("v1");
    expect(editor.fieldsType).toBe("FieldsV1");
  });

  it("merges a manager's later writes into its one entry, and removes removed fields from every manager", async () => {
    const { store } = await registryFixture();
    const sa = store("ServiceAccount");
    await sa.create("default", serviceAccount({ labels: { a: "1", b: "2" } }), { fieldManager: "creator" });
    await sa.patch("default", "builder", (o) => ({ ...o, automountServiceAccountToken: true }), { fieldManager: "patcher" });
    const r = await sa.patch("default", "builder", (o) => ({ ...o, metadata: { ...o.metadata, labels: { a: "1", c: "3" } } }), { fieldManager: "patcher" });
    expect(fieldsOf(r.object)).toEqual({
      "creator/Update": { "f:metadata": { "f:labels": { ".": {}, "f:a": {} } } },
      "patcher/Update": { "f:automountServiceAccountToken": {}, "f:metadata": { "f:labels": { "f:c": {} } } },
    });
  });

  it("a write that changes nothing stores nothing and adds no entry", async () => {
    const { store, clock } = await registryFixture();
    const sa = store("ServiceAccount");
    const created = (await sa.create("default", serviceAccount({ automount: true }), { fieldManager: "creator" })).object;
    clock.advance(60_000);
    const again = await sa.update("default", "builder", structuredClone(created), { fieldManager: "someone-else" });
    expect(again.object).toEqual(created);
    const patched = await sa.patch("default", "builder", (o) => o, { fieldManager: "patcher" });
    expect(patched.object).toEqual(created);
  });

  it("records subresource writes with `subresource`, owning only what they may write", async () => {
    const { store } = await registryFixture();
    const csrs = store("CertificateSigningRequest");
    await csrs.create(undefined, await newCsrObject({ name: "c1" }), { fieldManager: "requester", user: { username: "alice" } });
    const r = await csrs.patch(
      undefined,
      "c1",
      (o) => ({ ...o, spec: { ...(o.spec as object), signerName: "ignored.example/x" }, status: { conditions: [{ type: "Approved", status: "True", reason: "ok" }] } }),
      { fieldManager: "approver", subresource: "approval", user: { username: "admin", groups: ["system:masters"] } },
    );
    const approver = r.object.metadata.managedFields!.find((e) => e.manager === "approver")!;
    expect(approver.subresource).toBe("approval");
    expect(approver.fieldsV1).toEqual({
      "f:status": { "f:conditions": { ".": {}, 'k:{"type":"Approved"}': { ".": {}, "f:reason": {}, "f:status": {}, "f:type": {} } } },
    });
    // The requester owns its spec, not the server-set identity fields.
    expect(fieldsOf(r.object)["requester/Update"]).toEqual({ "f:spec": { "f:request": {}, "f:signerName": {}, "f:usages": {} } });
  });
});

describe("apply through a subresource", () => {
  it("records an Apply entry with its subresource, owning only the status it applied", async () => {
    const { store, names } = await registryFixture();
    const csrs = store("CertificateSigningRequest");
    await csrs.create(undefined, await newCsrObject({ name: "c2" }), { fieldManager: "requester", user: { username: "alice" } });
    const config = {
      apiVersion: `${names.certificates}/v1`,
      kind: "CertificateSigningRequest",
      metadata: { name: "c2" },
      status: { conditions: [{ type: "Approved", status: "True", reason: "ApprovedByPolicy" }] },
    };
    const admin = { username: "admin", groups: ["system:masters"] };
    const r = await csrs.apply(undefined, "c2", config, { fieldManager: "policy", force: false, subresource: "approval", user: admin });
    const conditions = (r.object.status as { conditions?: { type: string; reason?: string }[] } | undefined)?.conditions;
    expect(conditions?.map((c) => [c.type, c.reason])).toEqual([["Approved", "ApprovedByPolicy"]]);
    expect(r.object.metadata.managedFields?.find((e) => e.manager === "policy")).toMatchObject({
      operation: "Apply",
      subresource: "approval",
      fieldsV1: { "f:status": { "f:conditions": { 'k:{"type":"Approved"}': { ".": {}, "f:reason": {}, "f:status": {}, "f:type": {} } } } },
    });
    // Applying it again changes nothing.
    expect((await csrs.apply(undefined, "c2", config, { fieldManager: "policy", force: false, subresource: "approval", user: admin })).object).toEqual(r.object);
  });
});

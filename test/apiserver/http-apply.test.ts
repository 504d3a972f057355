// Server-side apply over HTTP: application/apply-patch+yaml with YAML or JSON bodies, fieldManager, force, dryRun, Status answers.
import { describe, expect, it } from "vitest";
import { call } from "./http-client.js";
import { SA_PATH, sharedServer } from "./fixtures.js";

const shared = sharedServer();
const APPLY = "application/apply-patch+yaml";

const yaml = (name: string, labels: Record<string, string>) =>
  `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n  labels:\n${Object.entries(labels).map(([k, v]) => `    ${k}: "${v}"`).join("\n")}\n`;

describe("apply over HTTP", () => {
  it("creates from a YAML body (201), then applies a JSON body (200), recording Apply entries", async () => {
    const name = shared.unique("apply");
    const created = await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=a`, { body: yaml(name, { x: "1" }), contentType: APPLY });
    expect(created.status).toBe(201);
    expect(created.body.metadata.managedFields).toEqual([
      { manager: "a", operation: "Apply", apiVersion: "v1", time: expect.any(String), fieldsType: "FieldsV1", fieldsV1: { "f:metadata": { "f:labels": { "f:x": {} } } } },
    ]);
    const json = JSON.stringify({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name, labels: { y: "2" } } });
    const second = await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=b`, { body: json, contentType: APPLY });
    expect(second.status).toBe(200);
    expect(second.body.metadata.labels).toEqual({ x: "1", y: "2" });
  });

  it("answers a conflict with a 409 Status whose causes name each field, and force=true takes it", async () => {
    const name = shared.unique("apply");
    await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=a`, { body: yaml(name, { x: "1" }), contentType: APPLY });
    const clash = await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=b`, { body: yaml(name, { x: "2" }), contentType: APPLY });
    expect(clash.status).toBe(409);
    expect(clash.body).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "Conflict",
      code: 409,
      message: 'Apply failed with 1 conflict: conflict with "a": .metadata.labels.x',
      details: { causes: [{ reason: "FieldManagerConflict", message: 'conflict with "a"', field: ".metadata.labels.x" }] },
    });
    const forced = await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=b&force=true`, { body: yaml(name, { x: "2" }), contentType: APPLY });
    expect(forced.status).toBe(200);
    expect(forced.body.metadata.labels).toEqual({ x: "2" });
    expect(forced.body.metadata.managedFields.map((e: { manager: string }) => e.manager)).toEqual(["b"]);
  });

  it("honours dryRun=All, answering 201 for an object it would create (upstream's patch handler: created, dry run or not)", async () => {
    const name = shared.unique("apply");
    const dry = await call(shared.base, "PATCH", `${SA_PATH}/${name}?fieldManager=a&dryRun=All`, { body: yaml(name, { x: "1" }), contentType: APPLY });
    expect(dry.status).toBe(201);
    expect((await call(shared.base, "GET", `${SA_PATH}/${name}`)).status).toBe(404);
  });

  it.each([
    ["no fieldManager", "", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: NAME}\n", 422, "fieldManager: Required value: is required for apply patch"],
    ["a scalar body", "?fieldManager=a", "just text", 400, "must be a YAML or JSON object"],
    ["YAML that does not parse", "?fieldManager=a", "a: [", 400, "not valid YAML"],
    ["another kind", "?fieldManager=a", "apiVersion: v1\nkind: Secret\nmetadata: {name: NAME}\n", 400, "Specified patch kind: Secret, expected: ServiceAccount"],
    ["an unknown field under Strict", "?fieldManager=a&fieldValidation=Strict", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: NAME}\nbogus: 1\n", 400, 'unknown field "bogus"'],
  ])("refuses %s with a Status and stores nothing", async (_what, query, body, code, words) => {
    const name = shared.unique("apply");
    const r = await call(shared.base, "PATCH", `${SA_PATH}/${name}${query}`, { body: body.replace("NAME", name), contentType: APPLY });
    expect(r.status).toBe(code);
    expect(r.body.kind).toBe("Status");
    expect(r.body.message).toContain(words);
    expect((await call(shared.base, "GET", `${SA_PATH}/${name}`)).status).toBe(404);
  });
});

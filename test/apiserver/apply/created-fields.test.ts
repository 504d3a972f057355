// A create's managedFields from the one walk (created-fields.ts) against the general path (compare, strip, encode) on
// random objects of every kind's schema, values of the wrong shape included: the same FieldsV1 bytes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { schemaRegistry, type SchemaNode } from "../../../src/api/schema.js";
import { compareObjects } from "../../../src/apiserver/apply/compare.js";
import { createdFieldsV1 } from "../../../src/apiserver/apply/created-fields.js";
import { FieldManager } from "../../../src/apiserver/apply/field-manager.js";
import { ownable } from "../../../src/apiserver/apply/managers.js";
import { valueFor } from "./schema-values.js";

type Obj = Record<string, unknown>;

/** What the general path records for a create: every field added, less what no one owns, encoded. */
function general(obj: Obj, schema: SchemaNode, hasStatus: boolean): unknown {
  const taken = ownable(compareObjects(undefined, obj, schema).added, undefined, hasStatus);
  return taken.empty ? undefined : taken.toJSON();
}

const registry = schemaRegistry();

describe("createdFieldsV1", () => {
  it("gives the general path's FieldsV1, byte for byte, on random objects of every kind", () => {
    for (const { group, kind } of registry.kinds()) {
      const schema = registry.lookup(group, kind)!;
      const objects = fc.record({
        body: valueFor(schema, 0).filter((v): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v)),
        metadata: fc.oneof(valueFor(schema.fields.metadata, 1), fc.constant({ name: "n", uid: "u", managedFields: [{ manager: "m" }], labels: { a: "b" }, finalizers: ["f"] })),
        hasStatus: fc.boolean(),
      });
      fc.assert(
        fc.property(objects, ({ body, metadata, hasStatus }) => {
          const obj = { apiVersion: "v1", kind, ...body, metadata };
          expect(JSON.stringify(createdFieldsV1(obj, schema, hasStatus)), `${group}/${kind}`).toBe(JSON.stringify(general(obj, schema, hasStatus)));
        }),
        { numRuns: 60 },
      );
    }
  });

  it("is what FieldManager records for a create without managers, and not for one that sent its own", () => {
    const schema = registry.lookup("", "Secret")!;
    const fields = new FieldManager(schema, "v1", false);
    const writer = { manager: "kubectl", time: "2026-11-27T08:00:00Z" };
    const created = { apiVersion: "v1", kind: "Secret", metadata: { name: "c", labels: { app: "x" } }, data: { a: "MQ==" } };
    fields.update(undefined, created, writer);
    expect(created.metadata).toMatchObject({
      managedFields: [{ manager: "kubectl", operation: "Update", apiVersion: "v1", time: writer.time, fieldsType: "FieldsV1", fieldsV1: { "f:data": { ".": {}, "f:a": {} }, "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } } }],
    });
    // Managers the client sent are kept (the general path): the writer takes what it sent, beside what they still own.
    const sent: ApiObject = { apiVersion: "v1", kind: "Secret", metadata: { name: "c", managedFields: [{ manager: "other", operation: "Apply", apiVersion: "v1", fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:zz": {} } } }] }, data: { a: "MQ==", b: "Mg==" } };
    fields.update(undefined, sent, writer);
    expect(sent.metadata.managedFields?.map((m) => m.manager)).toEqual(["other", "kubectl"]);
    // Nothing to own: no managedFields at all.
    const bare: Obj = { apiVersion: "v1", kind: "Secret", metadata: { name: "c" } };
    fields.update(undefined, bare as never, writer);
    expect((bare.metadata as Obj).managedFields).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import { definition, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("ControllerRevision");
const revision = (body: Record<string, unknown>) => object(def, body);

describe("ControllerRevision", () => {
  it("is namespaced in apps/v1 with CONTROLLER and REVISION columns", () => {
    expect(def).toMatchObject({ group: "apps", version: "v1", plural: "controllerrevisions", namespaced: true });
    expect(def.columns?.map((c) => c.name)).toEqual(["Name", "Controller", "Revision", "Age"]);
  });

  it.each([
    ["an owning controller", [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "u", controller: true }], "daemonset.apps/agent"],
    ["a core-group controller", [{ apiVersion: "v1", kind: "Pod", name: "p", uid: "u", controller: true }], "pod/p"],
    ["an owner that does not control", [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "agent", uid: "u" }], "<none>"],
  ])("prints %s", (_, ownerReferences, controller) => {
    const obj = revision({ revision: 3, data: {} });
    obj.metadata.ownerReferences = ownerReferences;
    obj.metadata.creationTimestamp = "2030-01-02T03:04:00Z";
    expect(def.row?.(obj, NOW)).toEqual(["x", controller, 3, "5s"]);
  });

  it.each([
    ["revision 0", { revision: 0, data: { a: 1 } }],
    ["a large revision without data", { revision: 2 ** 40 }],
    ["raw data of any JSON shape", { revision: 1, data: [1, "two", null, { three: [3] }] }],
  ])("accepts %s", (_, body) => {
    expect(runCreate(def, revision(body)).errors).toEqual([]);
  });

  it.each([
    ["a missing revision", { data: {} }, "revision FieldValueRequired"],
    ["a negative revision", { revision: -1 }, "revision FieldValueInvalid"],
    ["a string revision", { revision: "1" }, "revision FieldValueTypeInvalid"],
    ["a fractional revision", { revision: 1.5 }, "revision FieldValueTypeInvalid"],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, revision(body)).errors)).toEqual([expected]);
  });

  it("accepts an update that leaves data as it was (key order aside) and keeps nulls inside data", () => {
    const previous = stored(def, revision({ revision: 1, data: { a: 1, b: { c: null } } }));
    const next = structuredClone(previous);
    next.data = { b: { c: null }, a: 1 };
    next.metadata.labels = { x: "y" };
    expect(runUpdate(def, next, previous).errors).toEqual([]);
    expect(next.data).toEqual({ b: { c: null }, a: 1 });
  });

  it.each([
    ["changed data", { a: 2 }],
    ["removed data", undefined],
    ["data added to a revision without it", "add"],
  ])("refuses %s", (_, data) => {
    const previous = stored(def, revision(data === "add" ? { revision: 1 } : { revision: 1, data: { a: 1 } }));
    const next = structuredClone(previous);
    if (data === undefined) delete next.data;
    else next.data = data === "add" ? { a: 1 } : data;
    const errors = runUpdate(def, next, previous).errors;
    expect(summary(errors)).toEqual(["data FieldValueInvalid"]);
    expect(errors[0]?.message).toContain("field is immutable");
  });
});

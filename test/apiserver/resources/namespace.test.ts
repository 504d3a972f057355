import { describe, expect, it } from "vitest";
import { ctx, definition, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("Namespace");

describe("Namespace", () => {
  it("is a cluster-scoped core kind with the ns short name and DNS-label names", () => {
    expect(def).toMatchObject({ group: "", version: "v1", plural: "namespaces", shortNames: ["ns"], namespaced: false, nameRule: "dns-label" });
  });

  it("starts Active whatever status the client sent, and prints its phase", () => {
    const { obj, errors } = runCreate(def, object(def, { status: { phase: "Terminating" } }, { creationTimestamp: "2030-01-02T02:04:05Z" }));
    expect(errors).toEqual([]);
    expect(obj.status).toEqual({ phase: "Active" });
    expect(def.row?.(obj, NOW)).toEqual(["x", "Active", "60m"]);
  });

  it.each([
    ["no finalizers", {}],
    ["a plain finalizer", { spec: { finalizers: ["kubernetes"] } }],
    ["a prefixed finalizer", { spec: { finalizers: ["example.com/cleanup"] } }],
  ])("accepts %s", (_, body) => {
    expect(runCreate(def, object(def, body)).errors).toEqual([]);
  });

  it.each([
    ["a finalizer with spaces", { spec: { finalizers: ["clean up"] } }, "spec.finalizers[0] FieldValueInvalid"],
    ["finalizers as one string", { spec: { finalizers: "kubernetes" } }, "spec.finalizers FieldValueTypeInvalid"],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, object(def, body)).errors)).toEqual([expected]);
  });

  it("keeps the stored status on a main-resource update", () => {
    const previous = stored(def, object(def, {}));
    const next = structuredClone(previous);
    next.status = { phase: "Terminating" };
    const { obj, errors } = runUpdate(def, next, previous);
    expect(errors).toEqual([]);
    expect(obj.status).toEqual({ phase: "Active" });
  });

  it("moves to Terminating through /status only once deleted, and keeps the spec", () => {
    const previous = stored(def, object(def, { spec: { finalizers: ["kubernetes"] } }));
    const next = structuredClone(previous);
    next.status = { phase: "Terminating" };
    next.spec = {};
    expect(summary(runUpdate(def, structuredClone(next), previous, ctx({ subresource: "status" })).errors)).toEqual(["status.phase FieldValueInvalid"]);
    previous.metadata.deletionTimestamp = next.metadata.deletionTimestamp = "2030-01-02T03:00:00Z";
    const { obj, errors } = runUpdate(def, next, previous, ctx({ subresource: "status" }));
    expect(errors).toEqual([]);
    expect(obj).toMatchObject({ status: { phase: "Terminating" }, spec: { finalizers: ["kubernetes"] } });
    next.status = { phase: "Active" };
    expect(summary(runUpdate(def, next, previous, ctx({ subresource: "status" })).errors)).toEqual(["status.phase FieldValueInvalid"]);
  });

  it.each([
    ["an unknown phase", "Gone", "status.phase FieldValueNotSupported"],
    ["a numeric phase", 1, "status.phase FieldValueTypeInvalid"],
  ])("refuses %s through /status", (_, phase, expected) => {
    const previous = stored(def, object(def, {}));
    const next = structuredClone(previous);
    next.status = { phase };
    expect(summary(runUpdate(def, next, previous, ctx({ subresource: "status" })).errors)).toEqual([expected]);
  });
});

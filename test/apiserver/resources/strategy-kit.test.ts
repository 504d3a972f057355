import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { contentChanged, deepEqual, immutableFields, keepAllBut, valueAt } from "../../../src/apiserver/registry/resources/strategy-kit.js";
import { summary } from "./fixtures.js";

const obj = (body: Record<string, unknown>, labels?: Record<string, string>): ApiObject => ({ apiVersion: "v1", kind: "Thing", metadata: { name: "a", ...(labels ? { labels } : {}) }, ...body });

describe("deepEqual", () => {
  it.each([
    ["objects with keys in another order", { a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }],
    ["an absent value and an empty list", undefined, []],
    ["null and an empty object", null, {}],
    ["an empty string and an absent field", { a: "" }, {}],
  ])("equates %s", (_, a, b) => {
    expect(deepEqual(a, b)).toBe(true);
  });

  it.each([
    ["lists in another order", [1, 2], [2, 1]],
    ["zero and absent", { a: 0 }, {}],
    ["false and absent", { a: false }, {}],
    ["a string and a number", "1", 1],
    ["a list and an object", [1], { 0: 1 }],
  ])("tells apart %s", (_, a, b) => {
    expect(deepEqual(a, b)).toBe(false);
  });
});

describe("update building blocks", () => {
  it("keepAllBut copies everything but metadata and the named fields from the stored object", () => {
    const next = obj({ spec: { a: 2 }, status: { s: 2 }, extra: true }, { l: "new" });
    keepAllBut(next, obj({ spec: { a: 1 }, status: { s: 1 } }), ["status"]);
    expect(next).toEqual(obj({ spec: { a: 1 }, status: { s: 2 } }, { l: "new" }));
  });

  it("immutableFields names each changed path and nothing else", () => {
    const errors = immutableFields(obj({ spec: { a: 2, b: 1, c: [] } }), obj({ spec: { a: 1, b: 1 } }), ["spec.a", "spec.b", "spec.c"]);
    expect(summary(errors)).toEqual(["spec.a FieldValueInvalid"]);
    expect(errors[0]?.message).toBe("Invalid value: 2: field is immutable");
  });

  it("valueAt reads dotted paths and stops at missing steps", () => {
    expect(valueAt({ a: { b: { c: 3 } } }, "a.b.c")).toBe(3);
    expect(valueAt({ a: "x" }, "a.b")).toBeUndefined();
  });

  it.each([
    ["a changed field", obj({ rules: [1] }), obj({ rules: [2] }), true],
    ["a changed label only", obj({ rules: [1] }, { a: "b" }), obj({ rules: [1] }), false],
    ["a changed status only", obj({ status: { a: 1 } }), obj({ status: { a: 2 } }), false],
  ])("contentChanged counts %s: %s", (_, next, previous, expected) => {
    expect(contentChanged(next, previous)).toBe(expected);
  });
});

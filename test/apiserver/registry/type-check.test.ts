import { describe, expect, it } from "vitest";
import * as s from "../../../src/api/schema/nodes.js";
import { dropNulls, typeErrors } from "../../../src/apiserver/registry/type-check.js";
import { summary } from "../resources/fixtures.js";

const SHAPE = s.object({
  name: s.string(),
  on: s.boolean(),
  small: s.int32(),
  big: s.int64(),
  at: s.time(),
  raw: s.any(),
  tags: s.atomicList(s.string()),
  labels: s.map(s.string()),
  extra: s.map(s.atomicList()),
  nested: s.object({ items: s.atomicList(s.object({ n: s.int32() })) }),
});

describe("typeErrors", () => {
  it.each([
    ["every field well typed", { name: "a", on: true, small: -(2 ** 31), big: 2 ** 53 - 1, at: "2030-01-02T03:04:05.123456+01:00", raw: [null, { a: 1 }], tags: ["a"], labels: { a: "b" }, extra: { k: ["v"] }, nested: { items: [{ n: 1 }] } }],
    ["nulls standing for absent fields", { name: null, tags: null, nested: null }],
    ["unknown fields", { other: 5 }],
  ])("accepts %s", (_, value) => {
    expect(typeErrors(value, SHAPE)).toEqual([]);
  });

  it.each([
    ["a number for a string", { name: 1 }, ["name FieldValueTypeInvalid"]],
    ["a string for a boolean", { on: "true" }, ["on FieldValueTypeInvalid"]],
    ["a fraction for an int32", { small: 1.5 }, ["small FieldValueTypeInvalid"]],
    ["an int32 out of range", { small: 2 ** 31 }, ["small FieldValueInvalid"]],
    ["an unsafe int64", { big: 2 ** 53 }, ["big FieldValueTypeInvalid"]],
    ["a date without zone", { at: "2030-01-02T03:04:05" }, ["at FieldValueInvalid"]],
    ["an impossible date", { at: "2030-02-31T03:04:05Z" }, ["at FieldValueInvalid"]],
    ["a number for a time", { at: 0 }, ["at FieldValueTypeInvalid"]],
    ["an object for a list", { tags: { a: 1 } }, ["tags FieldValueTypeInvalid"]],
    ["a null list item", { tags: ["a", null] }, ["tags[1] FieldValueInvalid"]],
    ["a wrong map value", { labels: { a: 1 } }, ["labels[a] FieldValueTypeInvalid"]],
    ["a wrong nested item", { nested: { items: [{ n: "1" }] } }, ["nested.items[0].n FieldValueTypeInvalid"]],
    ["a list for an object", { nested: [] }, ["nested FieldValueTypeInvalid"]],
  ])("refuses %s", (_, value, expected) => {
    expect(summary(typeErrors(value, SHAPE))).toEqual(expected);
  });

  it("names the expected type in the message", () => {
    expect(typeErrors({ small: "7" }, SHAPE, "spec")[0]).toEqual({ field: "spec.small", reason: "FieldValueTypeInvalid", message: 'Invalid value: "7": must be of type int32' });
  });
});

describe("dropNulls", () => {
  it("removes null known fields and map entries but leaves raw data alone", () => {
    const value = { name: null, raw: { a: null }, labels: { a: null, b: "x" }, nested: { items: [{ n: null }] } };
    dropNulls(value, SHAPE);
    expect(value).toEqual({ raw: { a: null }, labels: { b: "x" }, nested: { items: [{}] } });
  });
});

// The API's name rules as spec.signerName and the signers use them.
import { describe, expect, it } from "vitest";
import { validateSignerName } from "../../src/api/names.js";
import { summary } from "../apiserver/resources/fixtures.js";

describe("validateSignerName", () => {
  it.each(["example.com/foo", "a.b/c", "example.com/ns.name", "x.y/a-b.c-d"])("accepts %s", (name) => {
    expect(validateSignerName("f", name)).toEqual([]);
  });

  it.each([
    ["", ["f FieldValueRequired"]],
    ["example.com", ["f FieldValueInvalid"]],
    ["example.com/a/b", ["f FieldValueInvalid"]],
    ["example/foo", ["f FieldValueInvalid"]],
    ["exa_mple.com/foo", ["f FieldValueInvalid"]],
    ["example.com/fo_o", ["f FieldValueInvalid"]],
    ["example.com/a..b", ["f FieldValueInvalid"]],
    [`${"a.".repeat(130)}com/x`, ["f FieldValueTooLong"]],
  ])("refuses %j", (name, expected) => {
    expect(summary(validateSignerName("f", name))).toEqual(expected);
  });
});

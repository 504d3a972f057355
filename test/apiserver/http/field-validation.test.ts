// checkFields: unknown fields warned about, refused or dropped in place; a body without any left as it came.
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { schemaRegistry } from "../../../src/api/schema.js";
import { checkFields } from "../../../src/apiserver/http/field-validation.js";
import { csrObject } from "../../fixtures/csr.js";

const names = groupNames();
const registry = schemaRegistry(names);

function csr(extra: { spec?: Record<string, unknown>; top?: Record<string, unknown> } = {}): Record<string, unknown> {
  const base = csrObject({ name: "c", metadata: { labels: { a: "b" } }, signerName: names.signers.apiserverClient, usages: ["client auth"], spec: { ...extra.spec } });
  return { ...base, ...extra.top };
}

describe("checkFields", () => {
  it.each(["Warn", "Ignore"] as const)("under %s drops every unknown field in place, nested ones too", (mode) => {
    const body = csr({ spec: { colour: "blue" }, top: { extraTop: { deep: 1 } } });
    const warnings = checkFields(body, registry.forObject(body), mode);
    expect(body).toEqual(csr());
    expect(warnings).toEqual(mode === "Warn" ? ['unknown field "spec.colour"', 'unknown field "extraTop"'] : []);
  });

  it("refuses unknown fields under Strict and leaves the body alone", () => {
    const body = csr({ spec: { colour: "blue" } });
    expect(() => checkFields(body, registry.forObject(body), "Strict")).toThrow(/unknown field "spec.colour"/);
    expect(body).toEqual(csr({ spec: { colour: "blue" } }));
  });

  it.each(["Strict", "Warn", "Ignore"] as const)("under %s leaves a body without unknown fields as it came", (mode) => {
    const body = csr();
    expect(checkFields(body, registry.forObject(body), mode, { text: JSON.stringify(body) })).toEqual([]);
    expect(body).toEqual(csr());
  });
});

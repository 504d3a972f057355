import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { findUnknownFields, inspectFields, schemaRegistry } from "../../../src/api/schema.js";
import { csrObject } from "../../fixtures/csr.js";

const names = groupNames();
const registry = schemaRegistry(names);

/** The shared CSR object with fields this file probes: `spec` merged into spec, `top` over the whole object. */
function csrWith(extra: { spec?: Record<string, unknown>; top?: Record<string, unknown> } = {}): Record<string, unknown> {
  const base = csrObject({ name: "c", metadata: { labels: { a: "b" }, creationTimestamp: null as never }, signerName: names.signers.apiserverClient, usages: ["client auth"], spec: { extra: { k: ["v"] }, ...extra.spec } });
  return { ...base, ...extra.top };
}

function podObject(spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec };
}

const unknownCases: [string, Record<string, unknown>, string[]][] = [
  ["a clean CSR", csrWith(), []],
  ["a misspelt spec field", csrWith({ spec: { signername: "x" } }), ["spec.signername"]],
  ["fields at several levels", csrWith({ top: { statuz: {}, metadata: { name: "c", labelz: {} } } }), ["metadata.labelz", "statuz"]],
  ["a field inside a list item", { apiVersion: "v1", kind: "ServiceAccount", metadata: {}, secrets: [{ name: "a" }, { name: "b", nam: "x" }] }, ["secrets[1].nam"]],
  ["a field inside an Event reference", { apiVersion: `${names.events}/v1`, kind: "Event", metadata: {}, eventTime: "t", regarding: { kind: "Pod", pod: "x" } }, ["regarding.pod"]],
  ["extra Pod spec fields, which are preserved", podObject({ hostNetwork: true, containers: [{ name: "c", image: "i", resources: {} }] }), []],
  ["a misspelt field under a Pod env entry", podObject({ containers: [{ name: "c", env: [{ name: "A", valeu: "1" }] }] }), ["spec.containers[0].env[0].valeu"]],
  ["anything below ControllerRevision data", { apiVersion: "apps/v1", kind: "ControllerRevision", metadata: {}, revision: 1, data: { any: { thing: [1] } } }, []],
  ["a field below managedFields.fieldsV1 and one beside it", { apiVersion: "v1", kind: "Secret", metadata: { managedFields: [{ fieldsV1: { "f:data": {} }, extra: 1 }] } }, ["metadata.managedFields[0].extra"]],
];

describe("unknown field detection", () => {
  it.each(unknownCases)("reports %s", (_n, obj, paths) => {
    expect(findUnknownFields(obj, registry.forObject(obj)!)).toEqual(paths);
  });

  it.each([
    ["a string where an integer belongs", csrWith({ spec: { expirationSeconds: "600" } }), { path: "spec.expirationSeconds", expected: "integer", got: "string" }],
    ["a fraction where an integer belongs", csrWith({ spec: { expirationSeconds: 600.5 } }), { path: "spec.expirationSeconds", expected: "integer", got: "number" }],
    ["a string where a list belongs", csrWith({ spec: { usages: "client auth" } }), { path: "spec.usages", expected: "list", got: "string" }],
    ["a list where a map belongs", csrWith({ spec: { extra: ["k"] } }), { path: "spec.extra", expected: "map", got: "list" }],
    ["a number inside a map of lists", csrWith({ spec: { extra: { k: [1] } } }), { path: "spec.extra[k][0]", expected: "string", got: "number" }],
    ["a string where an object belongs", csrWith({ top: { status: "ok" } }), { path: "status", expected: "object", got: "string" }],
  ])("reports %s", (_n, obj, mismatch) => {
    expect(inspectFields(obj, registry.forObject(obj)!).wrongType).toEqual([mismatch]);
  });

  it("accepts null for any field", () => {
    const obj = csrWith({ spec: { usages: null, expirationSeconds: null }, top: { status: null } });
    expect(inspectFields(obj, registry.forObject(obj)!)).toEqual({ unknown: [], wrongType: [] });
  });
});

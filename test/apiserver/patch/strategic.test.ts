import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { schemaRegistry } from "../../../src/api/schema.js";
import { applyMergePatch } from "../../../src/apiserver/patch/merge.js";
import { applyStrategicMergePatch } from "../../../src/apiserver/patch/strategic.js";
import { isPlatformError } from "../../../src/errors.js";
import { csrObject } from "../../fixtures/csr.js";
import { roleBinding, userSubject } from "../auth/fixtures.js";

const names = groupNames();
const registry = schemaRegistry(names);

/** An approved apiserver-client request with labels, a finalizer and groups to patch. */
const nodeCsr = (): Record<string, unknown> =>
  csrObject({
    name: "node-csr",
    metadata: { finalizers: ["f/one"], labels: { a: "1" } },
    signerName: names.signers.apiserverClient,
    spec: { groups: ["g1", "g2"] },
    conditions: [{ status: "True", type: "Approved", reason: "AutoApproved" }],
  });

const bindingOf = (subjects: string[]): Record<string, unknown> => roleBinding("ns", "rb", { kind: "Role", name: "r" }, subjects.map(userSubject));

function patched(obj: Record<string, unknown>, patch: unknown): Record<string, unknown> {
  return applyStrategicMergePatch(obj, patch, registry.forObject(obj));
}

function refusal(obj: Record<string, unknown>, patch: unknown): string {
  try {
    patched(obj, patch);
  } catch (e) {
    if (isPlatformError(e, "PATCH_INVALID")) return e.message;
    throw e;
  }
  throw new Error("the patch was accepted");
}

describe("strategic merge patch on the server's kinds", () => {
  it.each([
    ["adds a condition type", [{ type: "Failed", reason: "SignerError" }], ["Approved", "Failed"]],
    ["updates the condition of the same type", [{ type: "Approved", reason: "Manual" }], ["Approved"]],
  ])("merges CSR status.conditions by type: %s", (_n, conditions, types) => {
    const out = patched(nodeCsr(), { status: { conditions } }) as { status: { conditions: { type: string; reason: string }[] } };
    expect(out.status.conditions.map((c) => c.type).sort()).toEqual(types);
    for (const c of conditions) expect(out.status.conditions.find((x) => x.type === c.type)?.reason).toBe(c.reason);
  });

  it.each([
    ["CSR spec.usages", nodeCsr(), { spec: { usages: ["server auth"] } }, ["spec", "usages"], ["server auth"]],
    ["CSR spec.groups", nodeCsr(), { spec: { groups: ["g3"] } }, ["spec", "groups"], ["g3"]],
    ["RoleBinding subjects", bindingOf(["alice", "bob"]), { subjects: [{ kind: "User", name: "carol" }] }, ["subjects"], [{ kind: "User", name: "carol" }]],
  ])("replaces the atomic list %s", (_n, obj, patch, path, expected) => {
    let value: unknown = patched(obj, patch);
    for (const p of path) value = (value as Record<string, unknown>)[p];
    expect(value).toEqual(expected);
  });

  it("merges metadata labels and deletes a label set to null", () => {
    const out = patched(nodeCsr(), { metadata: { labels: { a: null, b: "2" } } }) as { metadata: { labels: unknown } };
    expect(out.metadata.labels).toEqual({ b: "2" });
  });

  it.each([
    ["adds a finalizer once", { metadata: { finalizers: ["f/two", "f/one"] } }, ["f/two", "f/one"]],
    ["deletes a finalizer through the parallel list", { metadata: { "$deleteFromPrimitiveList/finalizers": ["f/one"] } }, []],
    ["orders finalizers by $setElementOrder", { metadata: { "$setElementOrder/finalizers": ["f/two", "f/one"], finalizers: ["f/two"] } }, ["f/two", "f/one"]],
  ])("treats finalizers as a set: %s", (_n, patch, expected) => {
    expect((patched(nodeCsr(), patch) as { metadata: { finalizers: string[] } }).metadata.finalizers).toEqual(expected);
  });
});

describe("strategic merge patch directives", () => {
  const sa = {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "sa", namespace: "ns", labels: { x: "1" } },
    secrets: [{ name: "s1" }, { name: "s2" }, { name: "s3" }],
  };

  it.each([
    ["$patch: delete removes one list element", { secrets: [{ name: "s2", $patch: "delete" }] }, ["s1", "s3"]],
    ["$patch: replace replaces the list", { secrets: [{ name: "n" }, { $patch: "replace" }] }, ["n"]],
    ["$setElementOrder reorders the list", { "$setElementOrder/secrets": [{ name: "s3" }, { name: "s1" }, { name: "s2" }] }, ["s3", "s1", "s2"]],
    ["a new element goes ahead of the live ones", { secrets: [{ name: "s0" }] }, ["s0", "s1", "s2", "s3"]],
    ["$setElementOrder places a new element", { "$setElementOrder/secrets": [{ name: "s1" }, { name: "s9" }, { name: "s2" }, { name: "s3" }], secrets: [{ name: "s9" }] }, ["s1", "s9", "s2", "s3"]],
  ])("allows %s", (_n, patch, expected) => {
    expect((patched(sa, patch) as { secrets: { name: string }[] }).secrets.map((s) => s.name)).toEqual(expected);
  });

  it.each([
    ["$patch: replace on a map", { metadata: { $patch: "replace", name: "sa" } }, { name: "sa" }],
    ["$patch: delete on a map", { metadata: { $patch: "delete" } }, {}],
    ["$retainKeys on a map", { metadata: { $retainKeys: ["name", "labels"], labels: { y: "2" } } }, { name: "sa", labels: { x: "1", y: "2" } }],
  ])("allows %s", (_n, patch, metadata) => {
    expect((patched(sa, patch) as { metadata: unknown }).metadata).toEqual(metadata);
  });

  it.each([
    ["$patch: merge in a map", { metadata: { $patch: "merge" } }, /unknown patch type "merge" in map/],
    ["$patch: merge in a list", { secrets: [{ name: "s1", $patch: "merge" }] }, /merging lists cannot yet be specified/],
    ["an unknown $patch in a list", { secrets: [{ name: "s1", $patch: "remove" }] }, /unknown patch type "remove"/],
    ["$patch: delete without the merge key", { secrets: [{ $patch: "delete" }] }, /merge key "name"/],
    ["$retainKeys missing a patched field", { metadata: { $retainKeys: ["name"], labels: { y: "2" } } }, /"labels" is patched but missing from \$retainKeys/],
    ["$retainKeys that is not a list", { metadata: { $retainKeys: { name: true } } }, /\$retainKeys must be a list/],
    ["$setElementOrder that contradicts the patch list", { "$setElementOrder/secrets": [{ name: "s1" }], secrets: [{ name: "s9" }] }, /does not match the \$setElementOrder list/],
    ["$setElementOrder that is not a list", { "$setElementOrder/secrets": { name: "s1" } }, /expected a list, got object/],
    ["$setElementOrder without a field name", { $setElementOrder: [] }, /expected \$setElementOrder\/<list field>/],
    ["$deleteFromPrimitiveList without a field name", { metadata: { $deleteFromPrimitiveList: ["x"] } }, /expected \$deleteFromPrimitiveList\/<list field>/],
    ["a list element without its merge key", { secrets: [{ namespace: "ns" }] }, /at secrets: list element does not contain the declared merge key "name"/],
    ["mixed element types in a merge list", { secrets: ["s4"] }, /list element types are not identical/],
  ])("refuses %s", (_n, patch, message) => {
    expect(refusal(sa, patch)).toMatch(message);
  });

  it("refuses a document or patch that is not an object", () => {
    expect(() => applyStrategicMergePatch([], {})).toThrow(/document to patch must be a JSON object/);
    expect(() => applyStrategicMergePatch({}, [])).toThrow(/must be a JSON object/);
  });

  it("leaves the document and the patch untouched", () => {
    const doc = nodeCsr();
    const patch = { metadata: { labels: { a: null } }, status: { conditions: [{ type: "Approved", $patch: "delete" }] } };
    const before = JSON.stringify([doc, patch]);
    const out = patched(doc, patch);
    expect(JSON.stringify([doc, patch])).toBe(before);
    expect((out as { status: { conditions: unknown[] } }).status.conditions).toEqual([]);
  });

  it("sets a `__proto__` key as data without touching the prototype", () => {
    const out = applyStrategicMergePatch({ a: {} }, JSON.parse('{"a":{"__proto__":{"polluted":true}}}'));
    expect(Object.getPrototypeOf(out.a)).toBe(Object.prototype);
    expect(Object.hasOwn(out.a as object, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("treats lists without schema as atomic", () => {
    expect(applyStrategicMergePatch({ items: [{ name: "a" }], keep: 1 }, { items: [{ name: "b" }] })).toEqual({ items: [{ name: "b" }], keep: 1 });
  });
});

describe("strategic merge patch properties", () => {
  const key = fc.string({ maxLength: 4 }).filter((k) => !k.startsWith("$") && k !== "__proto__");
  const { node } = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: "small", withCrossShrink: true }, fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.constant(null), tie("object")),
    object: fc.dictionary(key, tie("node"), { maxKeys: 4 }),
  }));
  const object = fc.dictionary(key, node, { maxKeys: 5 });

  it("equals a JSON merge patch for objects without lists when no schema is known", () => {
    fc.assert(
      fc.property(object, object, (doc, patch) => {
        expect(applyStrategicMergePatch(doc, patch)).toEqual(applyMergePatch(doc, patch));
      }),
      { numRuns: 300 },
    );
  });

  it("throws nothing but PATCH_INVALID for arbitrary patches of a Pod", () => {
    const podDoc = { apiVersion: "v1", kind: "Pod", metadata: { name: "p", finalizers: ["x"] }, spec: { containers: [{ name: "c", image: "i" }] } };
    const schema = registry.lookup("", "Pod");
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("metadata", "spec", "$patch", "$retainKeys", "$setElementOrder/spec"), fc.jsonValue({ maxDepth: 4 })), (patch) => {
        try {
          applyStrategicMergePatch(podDoc, patch, schema);
        } catch (e) {
          expect(isPlatformError(e, "PATCH_INVALID")).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

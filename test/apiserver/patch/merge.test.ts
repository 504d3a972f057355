import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyMergePatch } from "../../../src/apiserver/patch/merge.js";
import { PlatformError } from "../../../src/errors.js";

// RFC 7386 Appendix A, every row, plus the example of section 3.
const appendix: [unknown, unknown, unknown][] = [
  [{ a: "b" }, { a: "c" }, { a: "c" }],
  [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
  [{ a: "b" }, { a: null }, {}],
  [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
  [{ a: ["b"] }, { a: "c" }, { a: "c" }],
  [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
  [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
  [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
  [["a", "b"], ["c", "d"], ["c", "d"]],
  [{ a: "b" }, ["c"], ["c"]],
  [{ a: "foo" }, null, null],
  [{ a: "foo" }, "bar", "bar"],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: "b", c: null }, { a: "b" }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  [
    { title: "Goodbye!", author: { givenName: "John", familyName: "Doe" }, tags: ["example", "sample"], content: "This will be unchanged" },
    { title: "Hello!", phoneNumber: "+01-123-456-7890", author: { familyName: null }, tags: ["example"] },
    { title: "Hello!", author: { givenName: "John" }, tags: ["example"], content: "This will be unchanged", phoneNumber: "+01-123-456-7890" },
  ],
];

/** A merge patch that turns `from` into `to` (which must hold no nulls): the client side of RFC 7386. */
function mergeDiff(from: unknown, to: unknown): unknown {
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (!Object.hasOwn(to, key)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (!Object.hasOwn(from, key)) patch[key] = value;
    else if (JSON.stringify(from[key]) !== JSON.stringify(value)) patch[key] = mergeDiff(from[key], value);
  }
  return patch;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const safeKey = fc.string({ maxLength: 4 }).filter((k) => k !== "__proto__");
const { value: nullFree } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.array(tie("value"), { maxLength: 3 }), tie("object")),
  object: fc.dictionary(safeKey, tie("value"), { maxKeys: 4 }),
}));
const nullFreeObject = fc.dictionary(safeKey, nullFree, { maxKeys: 5 });

describe("JSON merge patch (RFC 7386)", () => {
  it.each(appendix.map((row, i) => [i + 1, ...row] as const))("applies example %i of the appendix", (_i, original, patch, result) => {
    expect(applyMergePatch(original, patch)).toEqual(result);
  });

  it("leaves the document and the patch untouched", () => {
    const doc = { a: { b: 1, c: [1] } };
    const patch = { a: { b: null, d: { e: 1 } } };
    const before = JSON.stringify([doc, patch]);
    const out = applyMergePatch(doc, patch) as { a: { c: number[] } };
    out.a.c.push(2);
    expect(JSON.stringify([doc, patch])).toBe(before);
  });

  it("sets a `__proto__` member as data", () => {
    const out = applyMergePatch({}, JSON.parse('{"__proto__":{"polluted":true}}')) as object;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
  });

  it("turns absurd nesting into PATCH_INVALID", () => {
    let deep: unknown = {};
    for (let i = 0; i < 20_000; i++) deep = { d: deep };
    expect(() => applyMergePatch({}, deep)).toThrow(/nested too deeply/);
  });

  it("throws nothing but typed errors for arbitrary JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (doc, patch) => {
        try {
          applyMergePatch(doc, patch);
        } catch (e) {
          expect(e).toBeInstanceOf(PlatformError);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("turns a document into another through the patch of their difference", () => {
    fc.assert(
      fc.property(nullFreeObject, nullFreeObject, (from, to) => {
        expect(applyMergePatch(from, mergeDiff(from, to))).toEqual(to);
      }),
      { numRuns: 300 },
    );
  });
});

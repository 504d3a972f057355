// The shortcuts of an update's managedFields against what they stand for: sameJson against node's deep equality (the
// comparison skips a subtree both sides hold equal), and a stored entry left undecoded against its decoded set's
// difference (a write takes paths from an entry without reading it when the entry holds none of them).
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { schemaRegistry } from "../../../src/api/schema.js";
import { compareObjects, sameJson } from "../../../src/apiserver/apply/compare.js";
import { FieldSet } from "../../../src/apiserver/apply/field-set.js";
import { decodeManaged, encodeManaged, ownsNothing, release } from "../../../src/apiserver/apply/managers.js";
import { valueFor } from "./schema-values.js";

/** Small JSON values over a few keys and leaves, so that two drawn apart are often equal or nearly so. */
const small: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<unknown>(0, 1, "x", "", null, true, false),
    fc.array(tie("v"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "c"), tie("v"), { maxKeys: 3, noNullPrototype: true }),
  ),
})).v;

/** The same value with every object's keys in reverse order. */
function reversed(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversed);
  if (typeof v !== "object" || v === null) return v;
  return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversed(x)]));
}

describe("sameJson", () => {
  it("agrees with node's deep strict equality on JSON values, whatever the order of their keys", () => {
    fc.assert(
      fc.property(small, small, (a, b) => {
        expect(sameJson(a, b)).toBe(isDeepStrictEqual(a, b));
        expect(sameJson(a, reversed(b))).toBe(isDeepStrictEqual(a, b));
        expect(sameJson(a, reversed(a))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("says unequal, never equal, for members holding undefined (the walk then decides)", () => {
    expect(sameJson({ a: undefined }, {})).toBe(false);
    expect(sameJson({ a: 1, b: undefined }, { a: 1, b: undefined })).toBe(true);
    expect(sameJson([1, [2]], [1, [3]])).toBe(false);
    expect(sameJson({ a: [] }, { a: {} })).toBe(false);
  });
});

/** A stored entry owning `set`, read back as a write reads the stored object's managedFields. */
function storedEntry(set: FieldSet) {
  const fieldsV1 = JSON.parse(JSON.stringify(set.toJSON())) as object;
  const [entry] = decodeManaged([{ manager: "m", operation: "Update", apiVersion: "v1", time: "2026-11-27T08:00:00Z", fieldsType: "FieldsV1", fieldsV1 }], true)!;
  return { entry: entry!, fieldsV1 };
}

const registry = schemaRegistry();

describe("release of paths from a stored entry", () => {
  it("gives its decoded set's difference, and leaves the stored value as it was when that changes nothing", () => {
    let untouched = 0;
    let touched = 0;
    for (const { group, kind } of registry.kinds()) {
      const schema = registry.lookup(group, kind)!;
      fc.assert(
        fc.property(valueFor(schema, 0), valueFor(schema, 0), fc.array(fc.nat(), { maxLength: 4 }), fc.boolean(), (a, b, picks, subset) => {
          const held = compareObjects(undefined, a, schema).added;
          let paths = compareObjects(undefined, b, schema).added;
          if (subset) {
            // Paths the entry holds, members with children among them: the cases where difference removes.
            const all = held.paths();
            paths = new FieldSet();
            for (const i of picks) if (all.length > 0) paths.insert(all[i % all.length]!);
          }
          const { entry, fieldsV1 } = storedEntry(held);
          release(entry, paths);
          const expected = held.difference(paths);
          expect(ownsNothing(entry), `${group}/${kind}`).toBe(expected.empty);
          if (expected.empty) return;
          const written = encodeManaged([entry])[0]!.fieldsV1;
          expect(JSON.stringify(written), `${group}/${kind}`).toBe(JSON.stringify(expected.toJSON()));
          // An entry the write does not touch is not decoded and not encoded again: its stored value, the same object.
          if (expected === held) {
            expect(written).toBe(fieldsV1);
            untouched++;
          } else touched++;
        }),
        { numRuns: 40 },
      );
    }
    // Both cases were met, so the property held on each.
    expect(untouched).toBeGreaterThan(50);
    expect(touched).toBeGreaterThan(50);
  });

  it("decodes an unreadable stored value when it is read, and refuses it then", () => {
    const [entry] = decodeManaged([{ manager: "m", operation: "Update", apiVersion: "v1", fieldsType: "FieldsV1", fieldsV1: { "x:bad": {} } }], true)!;
    const paths = new FieldSet();
    paths.insert(["f:spec"]);
    expect(() => release(entry!, paths)).not.toThrow();
    expect(() => entry!.set).toThrow(/unknown FieldsV1 element/);
  });
});

// Random values shaped by a kind's field schema, with values of the wrong shape mixed in: for the property tests of
// managedFields, whose rules differ by shape (struct, map, set or map list, leaf).
import fc from "fast-check";
import type { SchemaNode } from "../../../src/api/schema.js";

/** Values of the wrong shape, empty collections and null: where membership rules differ. */
const odd = fc.constantFrom<unknown>(null, {}, [], "", "x", 0, true, { zz: 1 });

const scalarOf = (node: SchemaNode): fc.Arbitrary<unknown> => {
  switch (node.type) {
    case "integer":
    case "number":
      return fc.integer({ min: -1, max: 3 });
    case "boolean":
      return fc.boolean();
    case "string":
      return fc.constantFrom("a", "b", "c d", "");
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
};

/** A value for `node`, mostly of its shape; lazily built, so a large or recursive schema is walked only where drawn. */
export function valueFor(node: SchemaNode | undefined, depth: number): fc.Arbitrary<unknown> {
  if (node === undefined || depth > 4) return fc.oneof(odd, fc.jsonValue({ maxDepth: 1 }));
  const shaped = ((): fc.Arbitrary<unknown> => {
    switch (node.type) {
      case "object": {
        const names = Object.keys(node.fields);
        return fc.tuple(fc.subarray(names, { maxLength: Math.min(5, names.length) }), fc.boolean()).chain(([picked, unknown]) =>
          fc.record(Object.fromEntries([...picked.map((k) => [k, valueFor(node.fields[k], depth + 1)] as const), ...(unknown ? [["zz", valueFor(undefined, depth + 1)] as const] : [])])),
        );
      }
      case "map":
        return fc.dictionary(fc.constantFrom("k1", "k2", "a/b", "0"), valueFor(node.values, depth + 1), { maxKeys: 3 });
      case "list":
        return fc.array(valueFor(node.items, depth + 1), { maxLength: 3 });
      default:
        return scalarOf(node);
    }
  })();
  return fc.oneof({ arbitrary: shaped, weight: 6 }, { arbitrary: odd, weight: 1 });
}


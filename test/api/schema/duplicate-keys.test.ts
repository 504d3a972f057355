import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findDuplicateKeys } from "../../../src/api/schema.js";
import { isPlatformError } from "../../../src/errors.js";

describe("duplicate JSON key detection", () => {
  it.each([
    ["no duplicates", '{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}', []],
    ["a top-level duplicate", '{"kind":"Pod","kind":"Secret"}', ["kind"]],
    ["a nested duplicate", '{"metadata":{"name":"a","labels":{},"name":"b"}}', ["metadata.name"]],
    ["a duplicate inside a list item", '{"spec":{"containers":[{"name":"a"},{"name":"b","image":"x","image":"y"}]}}', ["spec.containers[1].image"]],
    ["the same key spelt with an escape", '{"a":1,"\\u0061":2}', ["a"]],
    ["a key that repeats three times, twice", '{"x":1,"x":2,"x":3}', ["x", "x"]],
    ["duplicates in sibling objects only once each", '[{"op":"add","op":"remove"},{"path":"/a","path":"/b"}]', ["[0].op", "[1].path"]],
    ["keys equal only to a sibling's, which are fine", '{"a":{"k":1},"b":{"k":1}}', []],
    ["strings that look like structure", '{"a":"{\\"a\\":1,\\"a\\":2}","b":"]["}', []],
    ["a scalar document", " 42 ", []],
  ])("finds %s", (_n, text, paths) => {
    expect(findDuplicateKeys(text)).toEqual(paths);
  });

  it.each([['{"a":1'], ['{"a" 1}'], ["[1,]"], ['{"a":1}x'], ['{"a":"unterminated}'], [""], ["{'a':1}"]])("refuses %j as not JSON", (text) => {
    let code: string | undefined;
    try {
      findDuplicateKeys(text);
    } catch (e) {
      code = isPlatformError(e) ? e.code : "untyped";
    }
    expect(code).toBe("BAD_REQUEST");
  });

  it("scans nesting far deeper than the call stack allows", () => {
    const depth = 200_000;
    const text = `${'{"a":'.repeat(depth)}{"b":1,"b":2}${"}".repeat(depth)}`;
    const found = findDuplicateKeys(text);
    expect(found).toHaveLength(1);
    expect(found[0]!.endsWith("a.a.b")).toBe(true);
  });

  it.each([
    ['{"a":"x\\\\","a":1}', ["a"]],
    ['{"a":"x\\"y","b":{"a":1},"a":2}', ["a"]],
    ['{"a":"\\\\\\"","b":"\\\\","b":3}', ["b"]],
    ['{"a":"\\\\\\"}', "BAD_REQUEST"],
  ])("reads past escaped quotes and backslashes in string values: %s", (text, expected) => {
    if (expected === "BAD_REQUEST") expect(() => findDuplicateKeys(text)).toThrow(/unterminated string/);
    else expect(findDuplicateKeys(text)).toEqual(expected);
  });

  it("finds nothing in any JSON.stringify output", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(findDuplicateKeys(JSON.stringify(v, null, 1))).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it("finds a key repeated at the end of any object", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 }), (obj) => {
        const [first] = Object.keys(obj);
        const text = `${JSON.stringify(obj).slice(0, -1)},${JSON.stringify(first)}:null}`;
        expect(findDuplicateKeys(text)).toEqual([first]);
      }),
      { numRuns: 200 },
    );
  });

  describe("with the decoded value (the key count settles most bodies without a scan)", () => {
    it.each([
      ["no duplicates", '{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}'],
      ["a nested duplicate", '{"metadata":{"name":"a","labels":{},"name":"b"}}'],
      ["a duplicate hidden by a value holding an escaped quote and a colon", '{"a":"x\\":1","b":1,"b":2}'],
      ["a value that looks like a key, no duplicate", '{"a":"x\\" : y"}'],
      ["blanks before the colon", '{ "a" :\n1 , "a"\t: 2 }'],
      ["a scalar document", "42"],
    ])("finds what the scan finds: %s", (_n, text) => {
      expect(findDuplicateKeys(text, JSON.parse(text))).toEqual(findDuplicateKeys(text));
    });

    it("finds a duplicate exactly when the scan does, over generated documents", () => {
      const key = fc.oneof(fc.constantFrom("a", "b", "k", 'q":', "x\\"), fc.string({ maxLength: 4 }));
      const doc = fc.letrec<{ value: string }>((tie) => ({
        value: fc.oneof(
          { depthSize: "small", withCrossShrink: true },
          fc.jsonValue({ maxDepth: 0 }).map((v) => JSON.stringify(v)),
          fc.constantFrom('"\\":"', '"a\\" :b"'),
          fc.array(fc.tuple(key, tie("value")), { maxLength: 4 }).map((kvs) => `{${kvs.map(([k, v]) => `${JSON.stringify(k)} : ${v}`).join(",")}}`),
          fc.array(tie("value"), { maxLength: 3 }).map((vs) => `[${vs.join(",")}]`),
        ),
      })).value;
      fc.assert(
        fc.property(doc, (text) => {
          expect(findDuplicateKeys(text, JSON.parse(text))).toEqual(findDuplicateKeys(text));
        }),
        { numRuns: 500 },
      );
    });
  });
});

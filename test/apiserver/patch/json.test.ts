import { describe, expect, it } from "vitest";
import { applyJsonPatch } from "../../../src/apiserver/patch/json.js";
import { isPlatformError } from "../../../src/errors.js";

function failure(doc: unknown, ops: unknown, options = {}): string {
  try {
    applyJsonPatch(doc, ops, options);
  } catch (e) {
    if (isPlatformError(e, "PATCH_INVALID")) return e.message;
    throw e;
  }
  throw new Error("the patch was applied");
}

// RFC 6902 Appendix A, the examples that succeed.
const appendixApplied: [string, unknown, unknown[], unknown][] = [
  ["A.1 adds an object member", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { baz: "qux", foo: "bar" }],
  ["A.2 adds an array element", { foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
  ["A.3 removes an object member", { baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
  ["A.4 removes an array element", { foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
  ["A.5 replaces a value", { baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
  [
    "A.6 moves a value",
    { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
    [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
    { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } },
  ],
  ["A.7 moves an array element", { foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
  [
    "A.8 tests values successfully",
    { baz: "qux", foo: ["a", 2, "c"] },
    [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }],
    { baz: "qux", foo: ["a", 2, "c"] },
  ],
  ["A.10 adds a nested member object", { foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
  ["A.11 ignores unrecognized elements", { foo: "bar" }, [{ op: "add", path: "/baz", value: "qux", xyz: 123 }], { foo: "bar", baz: "qux" }],
  ["A.14 unescapes ~01 to ~1", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }], { "/": 9, "~1": 10 }],
  ["A.16 adds an array value", { foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
  ["copies a value", { a: { b: 1 } }, [{ op: "copy", from: "/a", path: "/c" }], { a: { b: 1 }, c: { b: 1 } }],
  ["replaces the whole document", { a: 1 }, [{ op: "replace", path: "", value: { b: 2 } }], { b: 2 }],
  ["tests objects regardless of member order", { a: { x: 1, y: [1, { z: 2 }] } }, [{ op: "test", path: "/a", value: { y: [1, { z: 2 }], x: 1 } }], { a: { x: 1, y: [1, { z: 2 }] } }],
];

// RFC 6902 Appendix A, the examples that fail, and other malformed operations.
const refused: [string, unknown, unknown, RegExp][] = [
  ["A.9 a failed test", { baz: "qux" }, [{ op: "test", path: "/baz", value: "bar" }], /operation 0 \(test "\/baz"\): test failed/],
  ["A.12 adding to a nonexistent target", { foo: "bar" }, [{ op: "add", path: "/baz/bat", value: "qux" }], /operation 0 \(add "\/baz\/bat"\): the parent of the path does not exist/],
  ["A.15 a string compared with a number", { "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: "10" }], /test failed/],
  ["removing a missing member", { a: 1 }, [{ op: "test", path: "/a", value: 1 }, { op: "remove", path: "/b" }], /operation 1 \(remove "\/b"\): the path does not exist/],
  ["replacing a missing member", { a: 1 }, [{ op: "replace", path: "/b", value: 1 }], /the path does not exist/],
  ["copying from a missing member", { a: 1 }, [{ op: "copy", from: "/x", path: "/b" }], /the `from` path does not exist/],
  ["an unknown op", { a: 1 }, [{ op: "append", path: "/a", value: 1 }], /operation 0 \(append "\/a"\): `op` must be one of/],
  ["a path without a leading slash", { a: 1 }, [{ op: "add", path: "a", value: 1 }], /`path` must be a JSON pointer/],
  ["an add without a value", { a: 1 }, [{ op: "add", path: "/b" }], /`value` is required/],
  ["a move without from", { a: 1 }, [{ op: "move", path: "/b" }], /`from` is required/],
  ["an operation that is not an object", { a: 1 }, [{ op: "test", path: "/a", value: 1 }, "remove /a"], /operation 1 .*must be a JSON object/],
  ["an array index with a leading zero", { a: [1, 2] }, [{ op: "replace", path: "/a/01", value: 3 }], /unsigned base-10 integer/],
  ["an array index past the end", { a: [1] }, [{ op: "add", path: "/a/5", value: 3 }], /past the end of the array/],
  ["`-` outside of add", { a: [1] }, [{ op: "remove", path: "/a/-" }], /unsigned base-10 integer/],
  ["a move into the value's own child", { a: { b: {} } }, [{ op: "move", from: "/a", path: "/a/b/c" }], /into one of its own children/],
  ["a change of __proto__", {}, [{ op: "add", path: "/__proto__/polluted", value: true }], /`__proto__`.*not allowed/],
  ["a patch that is not a list", { a: 1 }, { op: "remove", path: "/a" }, /must be a JSON array of operations/],
];

describe("JSON patch (RFC 6902)", () => {
  it.each(appendixApplied)("%s", (_name, doc, ops, expected) => {
    expect(applyJsonPatch(doc, ops)).toEqual(expected);
  });

  it.each(refused)("refuses %s, naming the operation", (_name, doc, ops, message) => {
    expect(failure(doc, ops)).toMatch(message);
  });

  it("names the failing path as the error cause", () => {
    try {
      applyJsonPatch({ a: 1 }, [{ op: "remove", path: "/nope" }]);
      expect.unreachable();
    } catch (e) {
      expect(isPlatformError(e, "PATCH_INVALID") && e.causes[0]?.field).toBe("/nope");
    }
  });

  it("refuses more operations than the limit", () => {
    const ops = Array.from({ length: 4 }, () => ({ op: "test", path: "/a", value: 1 }));
    expect(failure({ a: 1 }, ops, { maxOperations: 3 })).toMatch(/at most 3 operations, got 4/);
    expect(applyJsonPatch({ a: 1 }, ops, { maxOperations: 4 })).toEqual({ a: 1 });
  });

  it.each([[0], [-1], [1.5]])("refuses a maxOperations of %s", (maxOperations) => {
    expect(() => applyJsonPatch({}, [], { maxOperations })).toThrow(`expected \`maxOperations\` to be a positive integer, got ${maxOperations}`);
  });

  it("leaves the document and the operations untouched, and shares nothing with the result", () => {
    const doc = { a: { b: [1] } };
    const ops = [{ op: "add", path: "/c", value: { d: [2] } }, { op: "add", path: "/a/b/-", value: 3 }];
    const before = JSON.stringify([doc, ops]);
    const out = applyJsonPatch(doc, ops) as { c: { d: number[] } };
    out.c.d.push(9);
    expect(JSON.stringify([doc, ops])).toBe(before);
    expect(out).toEqual({ a: { b: [1, 3] }, c: { d: [2, 9] } });
  });

  it("applies nothing when a later test fails", () => {
    const doc = { a: 1 };
    expect(failure(doc, [{ op: "replace", path: "/a", value: 2 }, { op: "test", path: "/a", value: 1 }])).toMatch(/operation 1/);
    expect(doc).toEqual({ a: 1 });
  });
});

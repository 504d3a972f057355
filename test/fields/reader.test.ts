// The one field reader: its message shape, unknown fields, each typed read, the schema over it, and fuzzing.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlatformError, PlatformError } from "../../src/errors.js";
import { describeValue, FieldReader, fieldMessage, Shown } from "../../src/fields/reader.js";
import { bool, duration, float, int32, list, object, oneOf, opaque, text } from "../../src/fields/schema.js";

const messages = (r: FieldReader) => r.errors.map((c) => c.message);

describe("FieldReader messages", () => {
  it("has one shape that names the path: expected `path` <expectation>, got <value>", () => {
    expect(fieldMessage("spec.expirationSeconds", "≥ 600", 300)).toBe("expected `spec.expirationSeconds` ≥ 600, got 300");
    expect(fieldMessage("", "a mapping", [1])).toBe("expected `(top level)` a mapping, got a list");
  });

  it.each([
    [undefined, "nothing"],
    [null, "null"],
    ["x", '"x"'],
    [5, "5"],
    [[1], "a list"],
    [{ secret: "s" }, "a mapping"],
    [new Shown("text that is not base64"), "text that is not base64"],
  ])("describes %j as %s", (value, text) => {
    expect(describeValue(value)).toBe(text);
  });

  it("reports unknown fields the same way everywhere: a hint when only the case differs, else the known fields", () => {
    const r = new FieldReader();
    r.object({ port: 1, Extra: 2, Port: 3 }, "Generic", ["Port", "Address"]);
    expect(r.unknown.map((c) => [c.field, c.message, c.reason])).toEqual([
      ["Generic.port", "unknown field `Generic.port`; did you mean `Port`?", "FieldValueUnknown"],
      ["Generic.Extra", "unknown field `Generic.Extra`; known fields: Port, Address", "FieldValueUnknown"],
    ]);
    expect(r.errors).toEqual([]);
    const strict = new FieldReader({ unknownFieldsAreErrors: true });
    strict.object({ x: 1 }, "", ["a"]);
    expect([strict.unknown, messages(strict)]).toEqual([[], ["unknown field `x`; known fields: a"]]);
  });

  it("turns what it collected into one error naming the document, every problem a cause", () => {
    const r = new FieldReader();
    expect(r.error("CONFIG_INVALID", "test file", "/f.yaml")).toBeUndefined();
    r.integer("x", "a", { min: 0 });
    const one = r.error("CONFIG_INVALID", "test file", "/f.yaml")!;
    expect(one.message).toBe('invalid test file /f.yaml: expected `a` a whole number ≥ 0, got "x"');
    for (let i = 0; i < 6; i++) r.boolean(i, `b${i}`);
    r.object({ z: 1 }, "", ["a"]);
    const all = r.error("POLICY_INVALID", "signer policy", undefined, { strict: true, details: { file: "f" } })!;
    expect([all.code, all.causes.length, all.details]).toEqual(["POLICY_INVALID", 8, { file: "f" }]);
    expect(all.message).toMatch(/^invalid signer policy: 8 problems: expected `a` .*; expected `b0` true or false, got 0; .*; and 3 more$/);
    expect(() => r.throwIfInvalid("CONFIG_INVALID", "x", "y")).toThrow(PlatformError);
  });
});

describe("FieldReader reads", () => {
  it.each<[string, (r: FieldReader) => unknown, unknown, string[]]>([
    ["an absent string", (r) => r.string(undefined, "s"), undefined, []],
    ["an empty string", (r) => r.string("", "s"), "", []],
    ["an empty string that must not be", (r) => r.string("", "s", { nonEmpty: true }), undefined, ['expected `s` a non-empty string, got ""']],
    ["a number as string", (r) => r.string(5, "s"), undefined, ["expected `s` a string, got 5"]],
    ["strings with a check", (r) => r.strings(["a", "", "b", 3], "l", (s) => (s === "b" ? "not b" : undefined)), ["a"], ['expected `l[1]` a non-empty string, got ""', 'expected `l[2]` not b, got "b"', "expected `l[3]` a non-empty string, got 3"]],
    ["a list that is not one", (r) => r.list("a", "l"), [], ['expected `l` a list, got "a"']],
    ["a boolean with its fallback", (r) => r.boolean(null, "b", true), true, []],
    ["a yes", (r) => r.boolean("yes", "b", false), false, ['expected `b` true or false, got "yes"']],
    ["an integer out of range", (r) => r.integer(70_000, "p", { min: 0, max: 65_535 }), undefined, ["expected `p` a whole number from 0 to 65535, got 70000"]],
    ["a fraction", (r) => r.integer(1.5, "p"), undefined, ["expected `p` a whole number, got 1.5"]],
    ["a float32 overflow", (r) => r.number(1e39, "f", { float32: true }), undefined, ["expected `f` a float32, got 1e+39"]],
    ["a number below its minimum", (r) => r.number(-1, "f", { min: 0 }), undefined, ["expected `f` a number ≥ 0, got -1"]],
    ["a choice it does not know", (r) => r.oneOf("c", "o", ["a", "b"], "a"), "a", ['expected `o` one of a, b, got "c"']],
    ["a duration with days", (r) => r.duration("1d", "d"), 86_400_000, []],
    ["a duration in whole seconds", (r) => r.duration(90, "d"), 90_000, []],
    ["a duration in words", (r) => r.duration("12 hours", "d"), undefined, ['expected `d` a duration such as "30s", "1h30m", "1.5h", "300ms", "90d" or whole seconds, got "12 hours"']],
    ["a duration below its minimum", (r) => r.duration("5m", "d", { min: 600_000 }), undefined, ['expected `d` a duration of at least 10m, got "5m"']],
    ["a duration that is not whole seconds", (r) => r.duration("600.5s", "d", { wholeSeconds: true }), undefined, ['expected `d` whole seconds, got "600.5s"']],
    ["a mapping that is a list", (r) => r.object([], "m"), undefined, ["expected `m` a mapping, got a list"]],
    ["a missing field", (r) => r.missing("m.name"), undefined, ["expected `m.name` to be set, got nothing"]],
  ])("%s", (_, read, value, expected) => {
    const r = new FieldReader();
    expect(read(r)).toEqual(value);
    expect(messages(r)).toEqual(expected);
  });
});

const shape = object({
  Port: int32(10257, { min: 0, max: 65_535 }),
  Name: text("n"),
  On: bool(true),
  Rate: float(20, 32),
  Every: duration("15s"),
  Mode: oneOf(["A", "B"], "A"),
  Items: list(object({ Key: text() }), []),
  Extra: opaque(),
});

describe("schema fields", () => {
  it("fills defaults, reads values in milliseconds, and reports problems in document order", () => {
    const r = new FieldReader();
    expect(shape.read({ Every: "1m", Items: [{ Key: "k" }] }, "", r)).toEqual({
      Port: 10257, Name: "n", On: true, Rate: 20, Every: 60_000, Mode: "A", Items: [{ Key: "k" }], Extra: undefined,
    });
    shape.read({ Mode: "C", Every: "-1s", Items: [{ Key: 1 }], Port: "x", Key: 1 }, "Top", r);
    expect(r.errors.map((c) => c.field)).toEqual(["Top.Mode", "Top.Every", "Top.Items[0].Key", "Top.Port"]);
    expect(messages(r)[1]).toBe('expected `Top.Every` a duration of at least 0s, got "-1s"');
    expect(r.unknown.map((c) => c.field)).toEqual(["Top.Key"]);
  });

  it("allows a negative duration only when asked", () => {
    const r = new FieldReader();
    expect(duration("0s", { allowNegative: true }).read("-1s", "d", r)).toBe(-1000);
    expect(() => duration("soon")).toThrow(TypeError);
    expect(r.errors).toEqual([]);
  });
});

describe("the field reader under fuzzing", () => {
  it("never throws on arbitrary documents, and every problem it records names a path in the one shape", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const r = new FieldReader();
        shape.read(value, "", r);
        const doc = r.object(value, "doc", ["a"]) ?? {};
        r.strings(doc.a, "doc.a");
        r.duration(doc.a, "doc.a", { min: 0, wholeSeconds: true });
        for (const cause of r.errors) expect(cause.message).toMatch(/^expected `[^`]+` .+, got /);
        const err = r.error("CONFIG_INVALID", "fuzzed document", "f");
        expect(err === undefined || isPlatformError(err, "CONFIG_INVALID")).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});

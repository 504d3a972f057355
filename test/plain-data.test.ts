import fc from "fast-check";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { MAX_NESTING_DEPTH, PlainDataError, copyPlain, parsePlainJson, parsePlainYaml, plainYamlValue } from "../src/plain-data.js";

describe("parsePlainYaml", () => {
  it.each([
    ["an alias without an anchor", "*", /alias/i],
    ["an alias named but never anchored", "a: *x", /Unresolved alias.*x/],
    ["a sequence that holds itself", "&a [*a]", /cycle/],
    ["a mapping that holds itself", "&a {x: *a}", /cycle/],
    ["an ordered map with a repeated key", "!!omap [{a: 1}, {a: 2}]", /duplicate keys|omap/i],
    ["a merge key without its anchor", "<<: *a", /Merge sources must be maps/],
    ["a merge of a scalar", "a: &s 3\nb: {<<: *s}", /Merge sources must be maps/],
    ["an alias bomb", `a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [${Array(10).fill("*a")}]\nc: &c [${Array(10).fill("*b")}]\nd: [${Array(101).fill("*c")}]`, /alias/i],
    ["two documents", "a: 1\n---\nb: 2", /multiple documents/i],
    ["a syntax error", "a: [", /line|flow/i],
  ])("refuses %s with a one-line PlainDataError", (_what, text, message) => {
    let caught: unknown;
    try {
      parsePlainYaml(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(PlainDataError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain("\n");
  });

  it.each([
    ["a flow sequence left open", "a: [1\nb: 2\n", "at line 2, column 1"],
    ["a flow map left open", "{bad", "at line 1, column 5"],
  ])("ends the message of %s at its position, not at the colon of the code frame", (_what, text, tail) => {
    expect(() => parsePlainYaml(text)).toThrow(new RegExp(`${tail}$`));
  });

  it.each([
    ["an empty text", "", null],
    ["shared anchors (a DAG, not a cycle)", "a: &x [1]\nb: *x", { a: [1], b: [1] }],
    ["a merge key", "base: &b {x: 1}\nderived: {<<: *b, y: 2}", { base: { x: 1 }, derived: { x: 1, y: 2 } }],
    ["YAML-only numbers", "[.nan, .inf, 0x1f]", [null, null, 31]],
    ["a timestamp tag", "!!timestamp 2001-12-14", "2001-12-14T00:00:00.000Z"],
    ["a collection as a key", "? [1, 2]\n: 3", { "[ 1, 2 ]": 3 }],
    ["an unknown tag", "!foo bar", "bar"],
  ])("reads %s as plain data", (_what, text, value) => {
    expect(parsePlainYaml(text)).toEqual(value);
  });

  it("refuses __proto__ keys, in YAML as in JSON, rather than lose them", () => {
    for (const read of [() => parsePlainYaml("a: {__proto__: {polluted: 1}, b: 2}"), () => parsePlainJson('{"a": {"__proto__": {"polluted": 1}, "b": 2}}'), () => parsePlainJson('[{"\\u005f_proto__": 1}]')]) {
      expect(read).toThrow(PlainDataError);
      expect(read).toThrow('the key "__proto__" is not accepted');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    }
    expect(parsePlainJson('{"a": "__proto__"}')).toEqual({ a: "__proto__" });
  });

  it("refuses a __proto__ key however its text is escaped, and reads every other value back unchanged", () => {
    const hasProtoKey = (v: unknown): boolean =>
      Array.isArray(v) ? v.some(hasProtoKey) : v !== null && typeof v === "object" ? Object.keys(v).some((k) => k === "__proto__" || hasProtoKey((v as Record<string, unknown>)[k])) : false;
    const key = fc.constantFrom("a", "__proto__", "proto", "_");
    const value = fc.letrec((tie) => ({ node: fc.oneof({ depthSize: "small" }, fc.string({ maxLength: 3 }), fc.array(tie("node"), { maxLength: 3 }), fc.dictionary(key, tie("node"), { maxKeys: 3 })) })).node;
    fc.assert(
      fc.property(value, fc.boolean(), (v, escape) => {
        // JSON.stringify writes an own __proto__ key as any other; escaping every "_" hides it from a text search.
        const text = escape ? JSON.stringify(v).replaceAll("_", "\\u005f") : JSON.stringify(v);
        if (hasProtoKey(v)) expect(() => parsePlainJson(text)).toThrow(PlainDataError);
        else expect(parsePlainJson(text)).toEqual(v);
      }),
      { numRuns: 2000 },
    );
  });

  it("prints nothing to stderr for YAML's warnings", () => {
    const warnings: unknown[] = [];
    const listener = (w: unknown) => warnings.push(w);
    process.on("warning", listener);
    try {
      parsePlainYaml("? [1, 2]\n: 3\n? {a: 1}\n: 4");
      plainYamlValue(parseAllDocuments("!bar x", { logLevel: "error" })[0]! as never);
    } finally {
      process.off("warning", listener);
    }
    return new Promise<void>((done) => setImmediate(() => (expect(warnings).toEqual([]), done())));
  });

  it("answers any text with plain data or a PlainDataError, nothing else (fuzz)", () => {
    const yamlish = fc.stringMatching(/^[-&*!<>?:{}\[\],# a-z01|.\n"']*$/, { maxLength: 60 });
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 60 }), yamlish), (text) => {
        let value: unknown;
        try {
          value = parsePlainYaml(text);
        } catch (err) {
          if (!(err instanceof PlainDataError)) throw err;
          return;
        }
        // Plain data survives a JSON round trip unchanged.
        expect(JSON.parse(JSON.stringify(value))).toEqual(value);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parsePlainJson", () => {
  it("refuses malformed JSON with a PlainDataError", () => {
    expect(() => parsePlainJson("{")).toThrow(PlainDataError);
  });

  it("walks a text only when its brackets could nest past the bound: wide values pass, deep ones of both kinds do not", () => {
    // More brackets than the bound, nested two deep: walked, and accepted.
    const wide = { items: Array.from({ length: MAX_NESTING_DEPTH * 2 }, (_, i) => ({ i, tags: [`t${i}`] })) };
    expect(parsePlainJson(JSON.stringify(wide))).toEqual(wide);
    // Brackets inside strings count too; the walk then finds nothing deep.
    const bracy = { note: "{[".repeat(MAX_NESTING_DEPTH) };
    expect(parsePlainJson(JSON.stringify(bracy))).toEqual(bracy);
    // One level past the bound, half objects and half arrays (each kind alone below the bound): refused.
    let deep: unknown = 0;
    for (let level = 0; level <= MAX_NESTING_DEPTH; level++) deep = level % 2 === 0 ? [deep] : { d: deep };
    expect(() => parsePlainJson(JSON.stringify(deep))).toThrow(/nested more than/);
  });
});

describe("copyPlain", () => {
  it("copies any JSON value deeply: equal, and sharing nothing a mutation could reach", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = copyPlain(value);
        expect(copy).toStrictEqual(value);
        const shared: unknown[] = [];
        const visit = (a: unknown, b: unknown): void => {
          if (a === null || typeof a !== "object") return;
          if (a === b) shared.push(a);
          for (const k of Object.keys(a)) visit((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]);
        };
        visit(value, copy);
        expect(shared).toEqual([]);
      }),
    );
  });

  it("keeps an own __proto__ key a key, and the copy's prototype Object's", () => {
    const value = JSON.parse('{"a":{"__proto__":{"polluted":true}}}') as { a: Record<string, unknown> };
    const copy = copyPlain(value);
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(Object.hasOwn(copy.a, "__proto__")).toBe(true);
    expect((copy.a as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
  });

  it("copies values that are not plain data as structuredClone does", () => {
    const when = new Date(0);
    const copy = copyPlain({ when, bytes: Buffer.from("ab") });
    expect(copy.when).toBeInstanceOf(Date);
    expect(copy.when).not.toBe(when);
    expect(copy.when.getTime()).toBe(0);
  });
});

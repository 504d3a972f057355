import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { selectorTextHint, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "../../src/apiserver/selectors.js";

const labels = { app: "web", tier: "front", "example.com/team": "a" };

describe("label selectors", () => {
  it.each([
    ["app=web", true],
    ["app==web", true],
    ["app=db", false],
    ["app!=db", true],
    ["app!=web", false],
    ["missing!=x", true],
    ["app in (web,db)", true],
    ["app in (db, cache)", false],
    ["app notin (db)", true],
    ["app notin (web)", false],
    ["missing notin (web)", true],
    ["missing in (web)", false],
    ["tier", true],
    ["missing", false],
    ["!missing", true],
    ["!tier", false],
    ["example.com/team=a", true],
    ["app=web,tier=front", true],
    ["app=web,tier=back", false],
    [" app = web , tier in ( front ) ", true],
    ["", true],
    ["app=", false],
  ])("selector %j on the sample labels matches: %s", (selector, expected) => {
    expect(matchesLabels(parseLabelSelector(selector), labels)).toBe(expected);
  });

  it("treats an object without labels as having none", () => {
    expect(matchesLabels(parseLabelSelector("!app"), undefined)).toBe(true);
    expect(matchesLabels(parseLabelSelector("app"), undefined)).toBe(false);
  });

  it.each([
    ["app=we b", "value"],
    ["-app=x", "key"],
    ["app in ()", "at least one value"],
    ["a/b/c=x", "key"],
    ["app=" + "x".repeat(64), "63"],
    ["app,,tier", "empty requirement"],
    ["Bad_Prefix.com/x=y", "prefix"],
  ])("refuses the malformed selector %j with a 400 naming the problem", (selector, words) => {
    let caught: unknown;
    try {
      parseLabelSelector(selector);
    } catch (err) {
      caught = err;
    }
    expect(isPlatformError(caught, "BAD_REQUEST")).toBe(true);
    expect((caught as Error).message).toContain(words);
  });
});

describe("field selectors", () => {
  const supported = ["metadata.name", "metadata.namespace", "spec.signerName"];
  const values: Record<string, string> = { "metadata.name": "csr-1", "metadata.namespace": "", "spec.signerName": "example.com/a,b" };
  it.each([
    ["metadata.name=csr-1", true],
    ["metadata.name==csr-1", true],
    ["metadata.name!=csr-1", false],
    ["metadata.name=csr-2", false],
    ["spec.signerName=example.com/a\\,b", true],
    ["metadata.name=csr-1,spec.signerName!=x", true],
    ["metadata.namespace=", true],
    ["", true],
  ])("selector %j matches: %s", (selector, expected) => {
    expect(matchesFields(parseFieldSelector(selector, supported), (f) => values[f])).toBe(expected);
  });

  it.each([
    ["spec.unknown=x", "field label not supported: spec.unknown"],
    ["metadata.name", "not of the form"],
    ["metadata.name>3", "not of the form"],
  ])("refuses %j with a 400", (selector, words) => {
    expect(() => parseFieldSelector(selector, supported)).toThrow(words);
  });
});

describe("selectorTextHint", () => {
  // Few values, so that generated labels often satisfy the generated selector.
  const word = fc.constantFrom("a", "b", "web", "x.y-z");
  const key = fc.constantFrom("app", "tier", "example.com/team", "v");
  const requirement = fc.oneof(
    fc.tuple(key, word).map(([k, v]) => `${k}=${v}`),
    fc.tuple(key, word).map(([k, v]) => `${k}!=${v}`),
    fc.tuple(key, fc.array(word, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} in (${vs.join(",")})`),
    fc.tuple(key, fc.array(word, { minLength: 1, maxLength: 3 })).map(([k, vs]) => `${k} notin (${vs.join(",")})`),
    key,
    key.map((k) => `!${k}`),
  );

  it("never turns away an object the selector matches (it only spares decoding those that cannot)", () => {
    fc.assert(
      fc.property(fc.dictionary(key, fc.oneof(word, fc.constant(""))), fc.array(requirement, { minLength: 1, maxLength: 3 }), fc.jsonValue(), (objLabels, reqs, other) => {
        const requirements = parseLabelSelector(reqs.join(","));
        const text = JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", labels: objLabels }, data: { other } });
        const hint = selectorTextHint(requirements);
        if (matchesLabels(requirements, objLabels)) expect(hint?.(text) ?? true).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("never turns away an object whose string field a field selector matches, whatever characters it holds", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.constantFrom('a"b', "a\\b", "a/b", "é", "\u2028")), fc.jsonValue(), (value, other) => {
        const text = JSON.stringify({ apiVersion: "v1", kind: "Secret", metadata: { name: "x" }, type: value, data: { other } });
        const requirement = { field: "type", operator: "=" as const, value };
        expect(matchesFields([requirement], () => value)).toBe(true);
        expect(selectorTextHint([], [requirement])?.(text) ?? true).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("turns away text without a required value, and has nothing to say without = or in", () => {
    const hint = selectorTextHint(parseLabelSelector("app=web,tier in (front,back)"))!;
    expect(hint('{"metadata":{"labels":{"app":"web","tier":"back"}}}')).toBe(true);
    expect(hint('{"metadata":{"labels":{"app":"web","tier":"middle"}}}')).toBe(false);
    expect(hint('{"metadata":{"labels":{"app":"webapp","tier":"front"}}}')).toBe(false);
    expect(selectorTextHint(parseLabelSelector("app!=web,!tier,team"))).toBeUndefined();
    // A missing field selects as "", so an empty value gives nothing to look for; nor does !=.
    expect(selectorTextHint([], parseFieldSelector("type=,spec.signerName!=a/b", ["type", "spec.signerName"]))).toBeUndefined();
    const field = selectorTextHint([], parseFieldSelector("spec.signerName=example.com/x", ["spec.signerName"]))!;
    expect(field('{"spec":{"signerName":"example.com/x"}}')).toBe(true);
    expect(field('{"spec":{"signerName":"example.com/y"}}')).toBe(false);
  });
});

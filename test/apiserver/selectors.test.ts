import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from "../../src/apiserver/selectors.js";

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

import { describe, expect, it } from "vitest";
import { classifyNames, issueFileBase } from "../../src/devpki/names.js";
import { isPlatformError } from "../../src/errors.js";

describe("classifyNames", () => {
  it.each([
    ["a DNS name", ["example.test"], { dns: ["example.test"] }],
    ["a wildcard DNS name", ["*.example.test"], { dns: ["*.example.test"] }],
    ["an upper-case DNS name, lower-cased", ["Example.TEST"], { dns: ["example.test"] }],
    ["an IPv4 address", ["127.0.0.1"], { ip: ["127.0.0.1"] }],
    ["an IPv6 address", ["::1"], { ip: ["::1"] }],
    ["a bracketed IPv6 address", ["[2001:db8::1]"], { ip: ["2001:db8::1"] }],
    ["an email (a name with @)", ["dev@example.test"], { email: ["dev@example.test"] }],
    ["a URI (a name with scheme://)", ["spiffe://cluster.local/ns/a/sa/b"], { uri: ["spiffe://cluster.local/ns/a/sa/b"] }],
    ["a mix, keeping order within each kind", ["b.test", "10.0.0.1", "a.test", "x@y.test"], { dns: ["b.test", "a.test"], ip: ["10.0.0.1"], email: ["x@y.test"] }],
  ])("recognises %s", (_, input, expected) => {
    expect(classifyNames(input)).toEqual({ dns: [], ip: [], email: [], uri: [], ...expected });
  });

  it.each([["a name with a space", "a b"], ["a bare word with a slash", "a/b"], ["an empty name", ""], ["an address-like name out of range", "999.1.1.1.1/8"]])(
    "refuses %s with INVALID_ARGUMENT naming it",
    (_, name) => {
      let caught: unknown;
      try {
        classifyNames([name]);
      } catch (err) {
        caught = err;
      }
      expect(isPlatformError(caught, "INVALID_ARGUMENT")).toBe(true);
      expect((caught as Error).message).toContain(JSON.stringify(name));
    },
  );

  it("refuses an empty list", () => {
    expect(() => classifyNames([])).toThrow(/at least one name/);
  });
});

describe("issueFileBase", () => {
  it.each([
    [["example.test"], false, "example.test"],
    [["example.test", "localhost", "127.0.0.1"], false, "example.test+2"],
    [["*.example.test"], false, "_wildcard.example.test"],
    [["::1"], false, "__1"],
    [["alice@example.test"], true, "alice@example.test-client"],
    [["spiffe://a/b"], false, "spiffe___a_b"],
  ])("names the files for %j (client %s) %s", (names, client, base) => {
    expect(issueFileBase(names, client)).toBe(base);
  });
});

// Name patterns: globs bounded by a separator, `**` across it, anchored regular expressions, CIDR ranges.
import { describe, expect, it } from "vitest";
import { compileCidrs, compilePattern } from "../../signers/patterns.js";

const DNS = { separator: ".", ignoreCase: true };

describe("policy name patterns", () => {
  it.each([
    ["* stays inside one DNS label", "*.example.com", DNS, "a.example.com", true],
    ["* does not cross a DNS dot", "*.example.com", DNS, "a.b.example.com", false],
    ["* needs the literal suffix", "*.example.com", DNS, "example.com", false],
    ["** crosses DNS dots", "**.example.com", DNS, "a.b.example.com", true],
    ["DNS comparison ignores case", "api.example.com", DNS, "API.EXAMPLE.com", true],
    ["* in an email stays before the @", "*@example.com", { separator: "@" }, "a.b@example.com", true],
    ["an email with a second @ does not match", "*@example.com", { separator: "@" }, "a@b@example.com", false],
    ["a URI pattern keeps path segments", "spiffe://x/ns/*/sa/*", { separator: "/" }, "spiffe://x/ns/a/sa/b", true],
    ["regex characters in a glob are literal", "a+b.(c)", {}, "a+b.(c)", true],
    ["a dot in a glob is not a wildcard", "a.b", {}, "axb", false],
    ["a regular expression matches the whole value", "/team-[a-z]+/", {}, "team-blue", true],
    ["a regular expression does not match a part", "/team-[a-z]+/", {}, "my-team-blue", false],
    ["an alternation stays anchored", "/a|b/", {}, "ab", false],
    ["the i flag ignores case", "/team-[a-z]+/i", {}, "TEAM-Blue", true],
    ["a subject glob * crosses anything", "system:node:*", {}, "system:node:a.b/c", true],
  ])("%s", (_, pattern, options, value, expected) => {
    expect(compilePattern(pattern, options)(value)).toBe(expected);
  });

  it("refuses a broken regular expression with its text", () => {
    expect(() => compilePattern("/[a-/")).toThrow(/invalid regular expression \/\[a-\//);
  });

  it.each([
    ["10.0.0.0/8", "10.255.0.1", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["192.168.1.7", "192.168.1.7", true],
    ["192.168.1.7", "192.168.1.8", false],
    ["fd00::/8", "fd12:3456::1", true],
    ["fd00::/8", "fe80::1", false],
    ["0.0.0.0/0", "8.8.8.8", true],
    ["::/0", "10.0.0.1", false],
    ["0.0.0.0/0", "::1", false],
  ])("range %s holds %s: %s", (range, address, expected) => {
    expect(compileCidrs([range])(address)).toBe(expected);
  });

  it.each(["10.0.0.0/33", "fd00::/129", "10.0.0/8", "10.0.0.0/8/1", "example.com", "10.0.0.0/x"])("refuses the range %s", (range) => {
    expect(() => compileCidrs([range])).toThrow(/is not an IPv4 or IPv6 address or CIDR range/);
  });
});

import { describe, expect, it } from "vitest";
import { trustBundleNamePrefix } from "../../../src/api/types/trust-bundle.js";
import { serviceAccountUsername } from "../../../src/api/types/service-account.js";

describe("names derived from resource fields", () => {
  it.each([
    ["example.com/foo", "example.com:foo:"],
    ["platform.io/apiserver-client", "platform.io:apiserver-client:"],
    ["example.com/ns.name", "example.com:ns.name:"],
  ])("prefixes the bundles of %s with %s", (signer, prefix) => {
    expect(trustBundleNamePrefix(signer)).toBe(prefix);
  });

  it("names a service account's user", () => {
    expect(serviceAccountUsername("ci", "robot")).toBe("system:serviceaccount:ci:robot");
  });
});

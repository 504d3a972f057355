// Qualified signer names and the well-known names derived from the group suffix.
import { describe, expect, it } from "vitest";
import { builtinSignerNames, signerNameProblem } from "../../signers/signer-name.js";

describe("signer names", () => {
  it.each(["example.com/my-signer", "platform.io/apiserver-client", "a.b.c/x.y.z"])("accepts %s", (name) => {
    expect(signerNameProblem(name)).toBeUndefined();
  });

  it.each([
    ["", /is required/],
    ["example.com", /form domain\/path/],
    ["example.com/a/b", /form domain\/path/],
    ["localhost/x", /at least two segments/],
    ["Example.com/x", /validating label "Example"/],
    ["example.com/", /validating component ""/],
    ["example.com/Short_Lived", /validating component "Short_Lived"/],
    ["example.com/-x", /validating component "-x"/],
  ])("refuses %j", (name, problem) => {
    expect(signerNameProblem(name)).toMatch(problem);
  });

  it("builds the well-known names from another suffix", () => {
    expect(builtinSignerNames("example.org")).toEqual({
      apiserverClient: "example.org/apiserver-client",
      nodeagentClient: "example.org/apiserver-client-nodeagent",
      nodeagentServing: "example.org/nodeagent-serving",
      legacyUnknown: "example.org/legacy-unknown",
    });
    expect(builtinSignerNames("k8s.io")).toEqual({
      apiserverClient: "kubernetes.io/kube-apiserver-client",
      nodeagentClient: "kubernetes.io/kube-apiserver-client-kubelet",
      nodeagentServing: "kubernetes.io/kubelet-serving",
      legacyUnknown: "kubernetes.io/legacy-unknown",
    });
  });

  it("refuses a bad suffix with the option message shape", () => {
    expect(() => builtinSignerNames("io")).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: 'expected `groupSuffix` to be a DNS name with at least two labels, got "io"' }));
  });
});

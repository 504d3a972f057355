// The public entry point of signers/: what it exports, and that importing it registers nothing.
import { describe, expect, it } from "vitest";
import * as signers from "../../signers/index.js";

describe("signers entry point", () => {
  it("exports the contract's implementations, registry, policy and plug-in loaders", () => {
    expect(Object.keys(signers).sort()).toEqual([
      "CaSigner", "DEFAULT_MAX_DURATION_SECONDS", "MASTERS_GROUP", "SignerRegistry", "builtinSignerNames", "createApiserverClientSigner",
      "createBuiltinSigners", "createLegacyUnknownSigner", "createNodeagentClientSigner", "createNodeagentServingSigner", "createPolicySigner",
      "defaultPlan", "forbiddenSanProblem", "formatDuration", "isQualifiedSignerName", "loadPolicyFile", "loadPolicySigner", "loadSignerPlugin",
      "nodeSubjectProblem", "parseDurationSeconds", "parsePolicy", "parsePolicyText", "signerNameProblem", "signerShapeProblem", "usageProblem",
    ]);
  });

  it("starts every registry empty: nothing registers itself on import", () => {
    expect(new signers.SignerRegistry().names()).toEqual([]);
  });
});

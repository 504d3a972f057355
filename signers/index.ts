// Public API of the signers package: the contract, the registry, the built-ins, the policy signer and plug-ins.
export type { Signer, SigningRequest, Validation } from "./signer.js";
export { SignerRegistry } from "./registry.js";
export { isQualifiedSignerName, signerNameProblem, builtinSignerNames } from "./signer-name.js";
export { CaSigner, type CaSignerOptions, type TrustPublication } from "./ca-signer.js";
export { DEFAULT_MAX_DURATION_SECONDS, type CaBackingOptions, type CaInput, type CaProvider } from "./ca-backing.js";
export { defaultPlan, type IssuePlan } from "./issue-plan.js";
export { usageProblem, nodeSubjectProblem, forbiddenSanProblem, type UsageRule } from "./rules.js";
export { createApiserverClientSigner, MASTERS_GROUP } from "./apiserver-client.js";
export { createNodeagentClientSigner } from "./apiserver-client-nodeagent.js";
export { createNodeagentServingSigner } from "./nodeagent-serving.js";
export { createLegacyUnknownSigner } from "./legacy-unknown.js";
export { createBuiltinSigners, type BuiltinSignersOptions } from "./builtins.js";
export type { BuiltinSignerKey, BuiltinSignerOptions } from "./builtin-signer.js";
export { parsePolicy, type SignerPolicy, type ParsePolicyOptions, type SanKind } from "./policy-schema.js";
export { parsePolicyText, loadPolicyFile, loadPolicySigner, type LoadPolicySignerOptions, type LoadedPolicySigner } from "./policy.js";
export { createPolicySigner, type PolicySignerOptions } from "./policy-signer.js";
export { parseDurationSeconds, formatDurationSeconds as formatDuration } from "../src/fields/duration.js";
export { loadSignerPlugin, signerShapeProblem, type SignerPluginContext, type LoadSignerPluginOptions } from "./plugin.js";

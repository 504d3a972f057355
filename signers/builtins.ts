// The four well-known signers, built like CSRSigningController: one shared cluster CA, or a CA per signer.
import { invalidOption } from "../src/errors.js";
import type { RequestRule } from "../src/pki/pool-rules.js";
import { apiserverClientRules, createApiserverClientSigner } from "./apiserver-client.js";
import type { BuiltinRulesData, BuiltinSignerKey, BuiltinSignerOptions } from "./builtin-signer.js";
import { createNodeagentClientSigner, nodeagentClientRules } from "./apiserver-client-nodeagent.js";
import type { CaBackingOptions, CaInput } from "./ca-backing.js";
import type { CaSigner } from "./ca-signer.js";
import { createLegacyUnknownSigner, legacyUnknownRules } from "./legacy-unknown.js";
import { createNodeagentServingSigner, nodeagentServingRules } from "./nodeagent-serving.js";

const FACTORIES: Readonly<Record<BuiltinSignerKey, (options: BuiltinSignerOptions) => CaSigner>> = {
  apiserverClient: createApiserverClientSigner,
  nodeagentClient: createNodeagentClientSigner,
  nodeagentServing: createNodeagentServingSigner,
  legacyUnknown: createLegacyUnknownSigner,
};
const KEYS = Object.keys(FACTORIES) as BuiltinSignerKey[];
const RULES: Readonly<Record<BuiltinSignerKey, (signerName: string) => RequestRule>> = {
  apiserverClient: apiserverClientRules,
  nodeagentClient: nodeagentClientRules,
  nodeagentServing: nodeagentServingRules,
  legacyUnknown: legacyUnknownRules,
};

/** A built-in signer's rules from their portable data: what the signing pool's workers load (builtin-signer.ts). */
export function builtinRules(data: BuiltinRulesData): RequestRule {
  const rules = Object.hasOwn(RULES, data.key) ? RULES[data.key] : undefined;
  if (rules === undefined) throw invalidOption("key", `to be one of ${KEYS.join(", ")}`, data.key);
  return rules(data.signerName);
}

export interface BuiltinSignersOptions extends Omit<CaBackingOptions, "ca"> {
  readonly groupSuffix?: string;
  /** One cluster CA for all four signers (ClusterSigningCertFile/KeyFile). */
  readonly ca?: CaInput;
  /** A CA per signer (the four per-signer CSRSigningConfiguration blocks); signers without one are not created. */
  readonly caPerSigner?: Partial<Record<BuiltinSignerKey, CaInput>>;
}

/** The built-in signers in a fixed order: API-server client, node-agent client, node-agent serving, legacy-unknown. */
export function createBuiltinSigners(options: BuiltinSignersOptions): CaSigner[] {
  const { ca, caPerSigner, ...common } = options;
  if (ca !== undefined && caPerSigner !== undefined) {
    throw invalidOption("caPerSigner", "to be unset when `ca` is set (one cluster CA, or one CA per signer)", Object.keys(caPerSigner));
  }
  if (ca !== undefined) return KEYS.map((key) => FACTORIES[key]({ ...common, ca }));
  if (caPerSigner === undefined || typeof caPerSigner !== "object") {
    throw invalidOption("ca", "or `caPerSigner` to be set", ca);
  }
  const unknown = Object.keys(caPerSigner).filter((key) => !(KEYS as string[]).includes(key));
  if (unknown.length > 0) throw invalidOption("caPerSigner", `to have keys among ${KEYS.join(", ")}`, unknown);
  const configured = KEYS.filter((key) => caPerSigner[key] !== undefined);
  if (configured.length === 0) throw invalidOption("caPerSigner", "to give a CA to at least one signer", caPerSigner);
  return configured.map((key) => FACTORIES[key]({ ...common, ca: caPerSigner[key]! }));
}

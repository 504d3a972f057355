// What the well-known signers share: their options, a name derived from the group suffix, a CaSigner with their rules.
import { compiledScript } from "../src/compiled-script.js";
import type { PortableRules, RequestRule } from "../src/pki/pool-rules.js";
import type { CaBackingOptions } from "./ca-backing.js";
import { CaSigner } from "./ca-signer.js";
import { builtinSignerNames } from "./signer-name.js";

export interface BuiltinSignerOptions extends CaBackingOptions {
  /** API group suffix the signer name is built from (default platform.io). */
  readonly groupSuffix?: string;
}

export type BuiltinSignerKey = "apiserverClient" | "nodeagentClient" | "nodeagentServing" | "legacyUnknown";

/** What a built-in signer's rules are built from (builtinRules in builtins.ts), in a worker thread as here. */
export interface BuiltinRulesData {
  readonly key: BuiltinSignerKey;
  readonly signerName: string;
}

/**
 * `rules(signerName)` gives the signer's check; messages name the signer, so the name comes first. The same rules
 * in portable form let the signing pool's workers judge requests beside their signature check.
 */
export function builtinSigner(options: BuiltinSignerOptions, key: BuiltinSignerKey, rules: (signerName: string) => RequestRule): CaSigner {
  const signerName = builtinSignerNames(options.groupSuffix)[key];
  return new CaSigner({ ...options, signerName, check: rules(signerName), ...portable({ key, signerName }) });
}

function portable(data: BuiltinRulesData): { portable?: PortableRules } {
  try {
    return { portable: { module: compiledScript("signers/builtins.js", "the built-in signers' rules").href, export: "builtinRules", data } };
  } catch {
    return {}; // sources run without a build: the rules stay on the calling thread, where they are anyway
  }
}

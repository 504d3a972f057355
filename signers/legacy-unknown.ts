// Built-in signer kept for requests that predate signer names: any subject, SANs and known usages.
import { builtinSigner, type BuiltinSignerOptions } from "./builtin-signer.js";
import type { CaSigner } from "./ca-signer.js";
import type { RequestRule } from "../src/pki/pool-rules.js";

/** No rules beyond the common request checks (known, distinct usages; a valid expirationSeconds). */
export function legacyUnknownRules(): RequestRule {
  return () => undefined;
}

export function createLegacyUnknownSigner(options: BuiltinSignerOptions): CaSigner {
  return builtinSigner(options, "legacyUnknown", legacyUnknownRules);
}

// Built-in signer kept for requests that predate signer names: any subject, SANs and known usages.
import { builtinSigner, type BuiltinSignerOptions } from "./builtin-signer.js";
import type { CaSigner } from "./ca-signer.js";

/** No rules beyond the common request checks (known, distinct usages; a valid expirationSeconds). */
export function createLegacyUnknownSigner(options: BuiltinSignerOptions): CaSigner {
  return builtinSigner(options, "legacyUnknown", () => () => undefined);
}

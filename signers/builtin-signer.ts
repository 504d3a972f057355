// What the well-known signers share: their options, a name derived from the group suffix, a CaSigner with their rules.
import { CaSigner, type CaBackingOptions } from "./ca-signer.js";
import type { SigningRequest } from "./signer.js";
import { builtinSignerNames } from "./signer-name.js";

export interface BuiltinSignerOptions extends CaBackingOptions {
  /** API group suffix the signer name is built from (default platform.io). */
  readonly groupSuffix?: string;
}

export type BuiltinSignerKey = "apiserverClient" | "nodeagentClient" | "nodeagentServing" | "legacyUnknown";

/** `rules(signerName)` gives the signer's check; messages name the signer, so the name comes first. */
export function builtinSigner(
  options: BuiltinSignerOptions,
  key: BuiltinSignerKey,
  rules: (signerName: string) => (request: SigningRequest) => string | undefined,
): CaSigner {
  const signerName = builtinSignerNames(options.groupSuffix)[key];
  return new CaSigner({ ...options, signerName, check: rules(signerName) });
}

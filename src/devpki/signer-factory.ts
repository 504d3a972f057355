// Builds the Signer a name refers to: a built-in signer, or a custom one from its policy file, backed by a given CA.
import { PlatformError } from "../errors.js";
import type { CaKeyPair } from "../pki/types.js";
import { createBuiltinSigners } from "../../signers/builtins.js";
import type { Signer, SignOptions, SigningRequest } from "../../signers/signer.js";

export interface SignerChoice {
  readonly signerName: string;
  readonly ca: CaKeyPair;
  /** API group suffix the built-in names derive from (default platform.io). */
  readonly groupSuffix?: string;
  /** Cluster maximum certificate lifetime (default one year). */
  readonly maxDurationSeconds?: number;
  /** A custom signer's policy file; its signerName must be `signerName`. */
  readonly policyFile?: string;
  readonly now?: () => Date;
}

/** The signer for `choice.signerName`; SIGNER_UNKNOWN lists the built-in names when there is none. */
export async function createSignerFor(choice: SignerChoice): Promise<Signer> {
  const backing = {
    ca: choice.ca,
    ...(choice.maxDurationSeconds !== undefined && { maxDurationSeconds: choice.maxDurationSeconds }),
    ...(choice.now !== undefined && { now: choice.now }),
  };
  if (choice.policyFile !== undefined) {
    // Loaded only for a policy: the YAML reader is most of a one-shot `sign`'s start-up otherwise.
    const [{ loadPolicyFile }, { createPolicySigner }] = await Promise.all([import("../../signers/policy.js"), import("../../signers/policy-signer.js")]);
    const policy = await loadPolicyFile(choice.policyFile);
    if (policy.signerName !== choice.signerName) {
      throw new PlatformError("POLICY_INVALID", `policy ${choice.policyFile} is for signer ${policy.signerName}, not ${choice.signerName}`);
    }
    return createPolicySigner(policy, backing);
  }
  const builtins = createBuiltinSigners({ ...backing, ...(choice.groupSuffix !== undefined && { groupSuffix: choice.groupSuffix }) });
  const signer = builtins.find((s) => s.signerName === choice.signerName);
  if (signer === undefined) {
    throw new PlatformError(
      "SIGNER_UNKNOWN",
      `${choice.signerName} is not a built-in signer (${builtins.map((s) => s.signerName).join(", ")}); give a custom signer a policy file or a plug-in`,
      { details: { name: choice.signerName } },
    );
  }
  return signer;
}

/** validate() then sign(): a refusal is SIGNER_REJECTED carrying the signer's own reason, whatever the signer's sign() does. */
export async function signWith(signer: Signer, request: SigningRequest, now: Date, options?: SignOptions): Promise<string> {
  const verdict = signer.validate(request);
  if (!verdict.ok) throw new PlatformError("SIGNER_REJECTED", verdict.reason, { details: { signerName: signer.signerName } });
  return signer.sign(request, now, options);
}

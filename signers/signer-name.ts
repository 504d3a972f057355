// Signer names are qualified names `domain/path`, as spec.signerName requires.
import { DEFAULT_GROUP_SUFFIX, groupNames, type GroupNames } from "../src/api/group.js";
import { invalidOption } from "../src/errors.js";
import { validateSignerName } from "../src/api/names.js";

/**
 * Why `name` is not a qualified signer name, or undefined when it is one. Delegates to the API's own
 * spec.signerName rule, so a signer can never claim a name that no CSR could carry.
 */
export function signerNameProblem(name: unknown): string | undefined {
  if (typeof name !== "string" || name.length === 0) return "a signer name is required";
  const errors = validateSignerName("signerName", name);
  if (errors.length === 0) return undefined;
  const why = errors.map((e) => e.message).join("; ");
  return `signer name ${JSON.stringify(name)} is not a qualified name of the form domain/path (e.g. example.com/my-signer): ${why}`;
}

export function isQualifiedSignerName(name: unknown): name is string {
  return signerNameProblem(name) === undefined;
}

/** The well-known signer names for a group suffix; a bad suffix is an option error, not a crash. */
export function builtinSignerNames(groupSuffix: string = DEFAULT_GROUP_SUFFIX): GroupNames["signers"] {
  try {
    return groupNames(groupSuffix).signers;
  } catch {
    throw invalidOption("groupSuffix", "to be a DNS name with at least two labels", groupSuffix);
  }
}

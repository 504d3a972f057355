// Long-lived ServiceAccount tokens kept in token Secrets (upstream's "legacy" tokens): their claims, signed by the token
// controller with the server's ServiceAccount key and read back by the API server's review.
import { SignJWT, type JWTPayload } from "jose";
import type { GroupNames } from "../../api/group.js";
import { serviceAccountUsername } from "./identity.js";
import type { SigningKey } from "./sa-signing-key.js";

/** Who a token Secret's token speaks for, and the Secret that holds it. */
export interface LegacyTokenSubject {
  readonly namespace: string;
  readonly secretName: string;
  readonly serviceAccountName: string;
  readonly serviceAccountUid: string;
}

/** The four private claims, under the profile's prefix (`kubernetes.io/serviceaccount/namespace`...). */
function claimNames(names: GroupNames) {
  const p = names.legacyToken.claimPrefix;
  return { namespace: `${p}/namespace`, secretName: `${p}/secret.name`, serviceAccountName: `${p}/service-account.name`, serviceAccountUid: `${p}/service-account.uid` } as const;
}

/**
 * The token of a token Secret, as upstream's tokens controller writes it: no expiry and no audience (such a token
 * is valid for the API server's own audiences while its Secret and ServiceAccount exist), signed ES256 with `key`.
 */
export function signLegacyToken(key: SigningKey, names: GroupNames, s: LegacyTokenSubject): Promise<string> {
  const c = claimNames(names);
  return new SignJWT({ [c.namespace]: s.namespace, [c.secretName]: s.secretName, [c.serviceAccountName]: s.serviceAccountName, [c.serviceAccountUid]: s.serviceAccountUid })
    .setProtectedHeader({ alg: "ES256", kid: key.keyId })
    .setIssuer(names.legacyToken.issuer)
    .setSubject(serviceAccountUsername(s.namespace, s.serviceAccountName))
    .sign(key.privateKey);
}

/** The subject of a verified legacy token's payload, or why its claims do not name one. */
export function readLegacyClaims(names: GroupNames, payload: JWTPayload): LegacyTokenSubject | string {
  const found: Record<string, string> = {};
  for (const [field, claim] of Object.entries(claimNames(names))) {
    const value = payload[claim];
    if (typeof value !== "string" || value === "") return `the token's ${claim} claim is missing`;
    found[field] = value;
  }
  const s = found as unknown as LegacyTokenSubject;
  if (payload.sub !== serviceAccountUsername(s.namespace, s.serviceAccountName)) return "the token's subject does not match its ServiceAccount claims";
  return s;
}

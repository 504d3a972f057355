// Well-known users and groups of the identity model, and the user-shaping functions every authenticator shares.
import type { UserInfo } from "../../api/meta.js";
import { serviceAccountUsername } from "../../api/types/service-account.js";

export const SYSTEM_AUTHENTICATED = "system:authenticated";
export const SYSTEM_UNAUTHENTICATED = "system:unauthenticated";
export const SYSTEM_ANONYMOUS = "system:anonymous";
export const SYSTEM_MASTERS = "system:masters";
export const SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts";
export const SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

/** What an authenticator answers: a user, or why the presented credentials are not accepted. */
/** Who authenticated the request, and by which method (`x509`, `token-file`, `service-account`, `basic-auth`, `anonymous`: recorded in the audit). */
export type AuthnResult = { readonly user: UserInfo; readonly authenticator?: string } | { readonly error: string };

export function isAuthenticated(result: AuthnResult): result is { readonly user: UserInfo } {
  return "user" in result;
}

export { serviceAccountUsername };

/** `system:serviceaccount:<ns>:<name>` → its parts; undefined for any other username. */
export function splitServiceAccountUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SERVICE_ACCOUNT_PREFIX)) return undefined;
  const parts = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(":");
  if (parts.length !== 2 || parts[0] === "" || parts[1] === "") return undefined;
  return { namespace: parts[0]!, name: parts[1]! };
}

/** The groups every ServiceAccount of a namespace is in. */
export function serviceAccountGroups(namespace: string): string[] {
  return [SERVICE_ACCOUNTS_GROUP, `${SERVICE_ACCOUNTS_GROUP}:${namespace}`];
}

/** A copy of `groups` with each of `extra` appended when missing, order kept. */
export function addGroups(groups: readonly string[] | undefined, ...extra: string[]): string[] {
  const out = [...(groups ?? [])];
  for (const g of extra) if (!out.includes(g)) out.push(g);
  return out;
}

/** The anonymous identity (only when anonymous access is enabled). */
export function anonymousUser(): UserInfo {
  return { username: SYSTEM_ANONYMOUS, groups: [SYSTEM_UNAUTHENTICATED] };
}

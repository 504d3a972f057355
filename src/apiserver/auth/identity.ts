// Well-known users and groups of the identity model, and the user-shaping functions every authenticator shares.
import type { UserInfo } from "../../api/meta.js";
import { serviceAccountUsername } from "../../api/types/service-account.js";

export const SYSTEM_AUTHENTICATED = "system:authenticated";
export const SYSTEM_UNAUTHENTICATED = "system:unauthenticated";
export const SYSTEM_ANONYMOUS = "system:anonymous";
export const SYSTEM_MASTERS = "system:masters";
export const SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts";
export const SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

/** Which authenticator accepted a user's credentials (and, for a JWT, its issuer): recorded in the audit. */
export interface AuthenticatedBy {
  readonly authenticator: "x509" | "token-file" | "service-account" | "bootstrap-token" | "jwt" | "basic-auth" | "anonymous";
  readonly issuer?: string;
}

/** What an authenticator answers: a user (and, from the chain, which method accepted it), or why the credentials are not accepted. */
export type AuthnResult = { readonly user: UserInfo; readonly authenticator?: AuthenticatedBy } | { readonly error: string };

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

/**
 * A user no one may change, groups included: an authenticator that hands one user object to every request of a
 * credential freezes it, so the audit (and the authenticator chain) can keep what they derive from it per object.
 */
export function frozenUser(user: UserInfo): UserInfo {
  const extra = user.extra && Object.freeze(Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, Object.freeze([...v])])));
  return Object.freeze({ ...user, groups: Object.freeze([...(user.groups ?? [])]) as string[], ...(extra && { extra: extra as Record<string, string[]> }) });
}

/** The anonymous identity (only when anonymous access is enabled). */
export function anonymousUser(): UserInfo {
  return { username: SYSTEM_ANONYMOUS, groups: [SYSTEM_UNAUTHENTICATED] };
}

// Impersonation: Impersonate-User/-Group/-Uid/-Extra-<key> headers, each dimension authorized with the `impersonate` verb.
import type { GroupNames } from "../../api/group.js";
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import { forbiddenError, type AuthorizationAttributes, type Authorizer } from "./authorizer.js";
import { serviceAccountGroups, splitServiceAccountUsername, SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED } from "./identity.js";

/** Request headers by lower-case name; repeated headers as arrays (`req.headersDistinct`) or joined with ", " (`req.headers`). */
export type HeaderSource = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Every impersonation header name starts with this (compared in lower case). */
export const IMPERSONATE_PREFIX = "impersonate-";
export const IMPERSONATE_USER = "impersonate-user";
export const IMPERSONATE_GROUP = "impersonate-group";
export const IMPERSONATE_UID = "impersonate-uid";
export const IMPERSONATE_EXTRA_PREFIX = "impersonate-extra-";

export interface ImpersonationResult {
  /** The identity the request runs as: the impersonated user, or the requester when nothing was asked. */
  readonly user: UserInfo;
  /** Audit record: who actually sent the request, present only when impersonating. */
  readonly impersonatedBy?: UserInfo;
}

interface Requested {
  readonly username?: string;
  readonly groups: string[];
  readonly uid?: string;
  readonly extra: Record<string, string[]>;
}

const badRequest = (message: string) => new PlatformError("BAD_REQUEST", message);

/** All values of a header; a joined `req.headers` value is split back on ", " (pass `headersDistinct` to keep commas). */
function values(v: string | readonly string[] | undefined): string[] {
  if (v === undefined) return [];
  if (typeof v === "string") return v.split(", ");
  return [...v];
}

function single(headers: HeaderSource, name: string): string | undefined {
  const all = values(headers[name]).filter((x) => x !== "");
  if (all.length > 1) throw badRequest(`the ${name} header may be given only once`);
  return all[0];
}

/** Reads the impersonation headers; BAD_REQUEST when groups, uid or extra come without a user, or a key is malformed. */
export function readImpersonationHeaders(raw: HeaderSource): Requested | undefined {
  const headers: Record<string, string | readonly string[] | undefined> = {};
  for (const [k, v] of Object.entries(raw ?? {})) if (k.toLowerCase().startsWith(IMPERSONATE_PREFIX)) headers[k.toLowerCase()] = v;
  if (Object.keys(headers).length === 0) return undefined;
  const username = single(headers, IMPERSONATE_USER);
  const uid = single(headers, IMPERSONATE_UID);
  const groups = values(headers[IMPERSONATE_GROUP]).filter((g) => g !== "");
  // Keys come from the client: no prototype, so `constructor` or `toString` are keys like any other.
  const extra: Record<string, string[]> = Object.create(null);
  for (const [name, v] of Object.entries(headers)) {
    if (!name.startsWith(IMPERSONATE_EXTRA_PREFIX)) continue;
    let key: string;
    try {
      key = decodeURIComponent(name.slice(IMPERSONATE_EXTRA_PREFIX.length)).toLowerCase();
    } catch {
      throw badRequest(`the header ${JSON.stringify(name)} has a malformed percent-encoded key`);
    }
    if (key === "") throw badRequest(`the header ${JSON.stringify(name)} names no extra key`);
    // As in request bodies (plain-data.ts): a later copy into an ordinary object would set its prototype instead.
    if (key === "__proto__") throw badRequest(`the header ${JSON.stringify(name)} names the extra key "__proto__", which is not accepted (it names an object's prototype)`);
    (extra[key] ??= []).push(...values(v));
  }
  const asked = groups.length > 0 || uid !== undefined || Object.keys(extra).length > 0;
  if (username === undefined) {
    if (asked) throw badRequest("impersonating groups, a uid or extra fields requires impersonating a user (Impersonate-User)");
    return undefined;
  }
  return { username, groups, ...(uid !== undefined && { uid }), extra };
}

/**
 * The effective user of a request: the requester, or the impersonated identity when every asked dimension is allowed.
 * FORBIDDEN names the first dimension refused; BAD_REQUEST for malformed headers.
 */
export async function impersonate(headers: HeaderSource, requester: UserInfo, authorizer: Authorizer, names: GroupNames): Promise<ImpersonationResult> {
  const req = readImpersonationHeaders(headers);
  if (!req?.username) return { user: requester };
  const username = req.username;
  const sa = splitServiceAccountUsername(username);
  const checks: Omit<AuthorizationAttributes, "user" | "verb" | "resourceRequest">[] = [
    sa ? { group: "", resource: "serviceaccounts", namespace: sa.namespace, name: sa.name } : { group: "", resource: "users", name: username },
    ...req.groups.map((g) => ({ group: "", resource: "groups", name: g })),
    ...(req.uid !== undefined ? [{ group: names.authentication, resource: "uids", name: req.uid }] : []),
    ...Object.entries(req.extra).flatMap(([key, vs]) => vs.map((v) => ({ group: names.authentication, resource: "userextras", subresource: key, name: v }))),
  ];
  for (const check of checks) {
    const attributes: AuthorizationAttributes = { ...check, user: requester, verb: "impersonate", resourceRequest: true };
    const decision = await authorizer.authorize(attributes);
    if (!decision.allowed) throw forbiddenError(attributes, decision.reason);
  }
  let groups = [...req.groups];
  // A ServiceAccount's groups are a fixed mapping from its namespace, so they are known when none were asked.
  if (sa && groups.length === 0) groups = serviceAccountGroups(sa.namespace);
  if (username === SYSTEM_ANONYMOUS) {
    if (!groups.includes(SYSTEM_UNAUTHENTICATED)) groups.push(SYSTEM_UNAUTHENTICATED);
  } else if (!groups.includes(SYSTEM_AUTHENTICATED) && !groups.includes(SYSTEM_UNAUTHENTICATED)) {
    groups.push(SYSTEM_AUTHENTICATED);
  }
  const user: UserInfo = {
    username,
    ...(req.uid !== undefined && { uid: req.uid }),
    groups,
    ...(Object.keys(req.extra).length > 0 && { extra: req.extra }),
  };
  return { user, impersonatedBy: requester };
}

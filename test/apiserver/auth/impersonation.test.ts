// Impersonation: each header dimension allowed and refused through RBAC, the resulting groups, and malformed headers.
import { describe, expect, it } from "vitest";
import { impersonate, readImpersonationHeaders, type HeaderSource } from "../../../src/apiserver/auth/impersonation.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { PlatformError } from "../../../src/errors.js";
import { clusterRole, clusterRoleBinding, names, role, roleBinding, rule, StaticLister, user, userSubject } from "./fixtures.js";

const AUTHN = names.authentication;
const rbac = new RbacAuthorizer({
  names,
  lister: new StaticLister({
    clusterRoles: [
      clusterRole("impersonator", [
        rule({ apiGroups: [""], resources: ["users"], resourceNames: ["jane", "system:anonymous"], verbs: ["impersonate"] }),
        rule({ apiGroups: [""], resources: ["groups"], resourceNames: ["devs", "system:authenticated"], verbs: ["impersonate"] }),
        rule({ apiGroups: [AUTHN], resources: ["uids"], resourceNames: ["uid-1"], verbs: ["impersonate"] }),
        rule({ apiGroups: [AUTHN], resources: ["userextras/scopes"], resourceNames: ["view"], verbs: ["impersonate"] }),
      ]),
    ],
    roles: [role("team", "sa-impersonator", [rule({ apiGroups: [""], resources: ["serviceaccounts"], resourceNames: ["builder"], verbs: ["impersonate"] })])],
    clusterRoleBindings: [clusterRoleBinding("impersonators", "impersonator", [userSubject("alice")])],
    roleBindings: [roleBinding("team", "sa-impersonators", { kind: "Role", name: "sa-impersonator" }, [userSubject("alice")])],
  }),
});
const alice = user({ username: "alice", groups: ["system:authenticated"] });

async function refusal(headers: HeaderSource, requester = alice): Promise<PlatformError> {
  try {
    await impersonate(headers, requester, rbac, names);
  } catch (err) {
    if (err instanceof PlatformError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("impersonate", () => {
  it("returns the requester unchanged when no impersonation is asked", async () => {
    expect(await impersonate({ accept: "application/json" }, alice, rbac, names)).toEqual({ user: alice });
  });

  it.each([
    ["a user", { "impersonate-user": "jane" }, { username: "jane", groups: ["system:authenticated"] }],
    ["a user and groups (repeated headers)", { "impersonate-user": "jane", "impersonate-group": ["devs", "system:authenticated"] }, { username: "jane", groups: ["devs", "system:authenticated"] }],
    ["a user and groups joined by node", { "impersonate-user": "jane", "impersonate-group": "devs, system:authenticated" }, { username: "jane", groups: ["devs", "system:authenticated"] }],
    ["a uid", { "impersonate-user": "jane", "impersonate-uid": "uid-1" }, { username: "jane", uid: "uid-1", groups: ["system:authenticated"] }],
    ["an extra field, key percent-decoded and lower-cased", { "impersonate-user": "jane", "impersonate-extra-Sco%70es": "view" }, { username: "jane", groups: ["system:authenticated"], extra: { scopes: ["view"] } }],
    ["a ServiceAccount, with its groups", { "impersonate-user": "system:serviceaccount:team:builder" }, { username: "system:serviceaccount:team:builder", groups: ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"] }],
    ["anonymous, with system:unauthenticated", { "impersonate-user": "system:anonymous" }, { username: "system:anonymous", groups: ["system:unauthenticated"] }],
  ])("lets an allowed requester impersonate %s", async (_name, headers, expected) => {
    expect(await impersonate(headers, alice, rbac, names)).toEqual({ user: expected, impersonatedBy: alice });
  });

  it.each([
    ["another user", { "impersonate-user": "root" }, 'users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope'],
    ["a group not granted", { "impersonate-user": "jane", "impersonate-group": "system:masters" }, 'groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope'],
    ["a uid not granted", { "impersonate-user": "jane", "impersonate-uid": "uid-2" }, `uids.${AUTHN} "uid-2" is forbidden: User "alice" cannot impersonate resource "uids" in API group "${AUTHN}" at the cluster scope`],
    ["an extra value not granted", { "impersonate-user": "jane", "impersonate-extra-scopes": "admin" }, `userextras.${AUTHN} "admin" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "${AUTHN}" at the cluster scope`],
    ["an extra key not granted", { "impersonate-user": "jane", "impersonate-extra-reason": "view" }, `userextras.${AUTHN} "view" is forbidden: User "alice" cannot impersonate resource "userextras/reason" in API group "${AUTHN}" at the cluster scope`],
    ["a ServiceAccount in another namespace", { "impersonate-user": "system:serviceaccount:prod:builder" }, 'serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "prod"'],
  ])("refuses %s", async (_name, headers, message) => {
    const err = await refusal(headers);
    expect(err.code).toBe("FORBIDDEN");
    expect(err.message).toBe(message);
  });

  it("refuses a requester without any impersonate permission", async () => {
    expect((await refusal({ "impersonate-user": "jane" }, user({ username: "mallory" }))).code).toBe("FORBIDDEN");
  });

  it.each([
    ["groups without a user", { "impersonate-group": "devs" }, /requires impersonating a user/],
    ["a uid without a user", { "impersonate-uid": "uid-1" }, /requires impersonating a user/],
    ["extra without a user", { "impersonate-extra-scopes": "view" }, /requires impersonating a user/],
    ["two users", { "impersonate-user": ["jane", "joe"] }, /may be given only once/],
    ["a malformed percent-encoding", { "impersonate-user": "jane", "impersonate-extra-%zz": "v" }, /malformed percent-encoded key/],
  ])("answers BAD_REQUEST for %s", async (_name, headers, message) => {
    const err = await refusal(headers as HeaderSource);
    expect(err.code).toBe("BAD_REQUEST");
    expect(err.message).toMatch(message);
  });

  it("treats an empty Impersonate-User as no impersonation", () => {
    expect(readImpersonationHeaders({ "impersonate-user": "" })).toBeUndefined();
  });
});

describe("extra keys named like Object.prototype members (found by the credential fuzz test: a 500)", () => {
  it.each(["constructor", "tostring", "hasownproperty"])("reads Impersonate-Extra-%s as an ordinary key", (key) => {
    const asked = readImpersonationHeaders({ "impersonate-user": "bob", [`impersonate-extra-${key}`]: ["a", "b"] });
    expect(asked?.extra[key]).toEqual(["a", "b"]);
    expect(Object.keys(asked!.extra)).toEqual([key]);
  });

  it("refuses Impersonate-Extra-__proto__ with a 400 naming it, as a __proto__ key in a body", () => {
    let err: unknown;
    try {
      readImpersonationHeaders({ "impersonate-user": "bob", "impersonate-extra-__proto__": "" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).code).toBe("BAD_REQUEST");
    expect((err as Error).message).toBe('the header "impersonate-extra-__proto__" names the extra key "__proto__", which is not accepted (it names an object\'s prototype)');
  });
});

// RBAC: both sides of every matching rule, binding scopes, subjects, evaluation errors, caching and the 403 text.
import { describe, expect, it } from "vitest";
import type { AuthorizationAttributes } from "../../../src/apiserver/auth/authorizer.js";
import { privilegedGroupsAuthorizer } from "../../../src/apiserver/auth/authorizer.js";
import { forbiddenMessage, RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import type { Subject } from "../../../src/api/types/rbac.js";
import { clusterRole, clusterRoleBinding, groupSubject, names, role, roleBinding, rule, saSubject, StaticLister, user, userSubject } from "./fixtures.js";

const CERT = names.certificates;
const NODE_SIGNER = names.signers.nodeagentClient;

function world(): StaticLister {
  return new StaticLister({
    clusterRoles: [
      clusterRole("csr-reader", [rule({ apiGroups: [CERT], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] })]),
      clusterRole("approver", [
        rule({ apiGroups: [CERT], resources: ["certificatesigningrequests/approval"], verbs: ["update"] }),
        rule({ apiGroups: [CERT], resources: ["signers"], resourceNames: [NODE_SIGNER], verbs: ["approve"] }),
      ]),
      clusterRole("status-writer", [rule({ apiGroups: ["*"], resources: ["*/status"], verbs: ["update"] })]),
      clusterRole("everything", [rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })]),
      clusterRole("metrics", [rule({ nonResourceURLs: ["/metrics", "/logs/*"], verbs: ["get"] })]),
      clusterRole("pod-reader", [rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })]),
    ],
    roles: [role("team", "secret-reader", [rule({ apiGroups: [""], resources: ["secrets"], resourceNames: ["app-creds"], verbs: ["get"] })])],
    clusterRoleBindings: [
      clusterRoleBinding("csr-readers", "csr-reader", [groupSubject("readers")]),
      clusterRoleBinding("approvers", "approver", [userSubject("alice")]),
      clusterRoleBinding("status-writers", "status-writer", [saSubject("ops", "statusbot")]),
      clusterRoleBinding("admins", "everything", [groupSubject("admins")]),
      clusterRoleBinding("metrics", "metrics", [userSubject("prom")]),
    ],
    roleBindings: [
      roleBinding("team", "pod-readers", { kind: "ClusterRole", name: "pod-reader" }, [userSubject("dana")]),
      // A ServiceAccount subject without a namespace means the binding's own namespace.
      roleBinding("team", "secrets", { kind: "Role", name: "secret-reader" }, [{ kind: "ServiceAccount", name: "app" }]),
    ],
  });
}

const csr = (o: Partial<AuthorizationAttributes> = {}): AuthorizationAttributes => ({
  user: user(),
  verb: "get",
  resourceRequest: true,
  group: CERT,
  resource: "certificatesigningrequests",
  ...o,
});
const path = (username: string, p: string, verb = "get"): AuthorizationAttributes => ({ user: user({ username }), verb, resourceRequest: false, path: p });
const sa = (ns: string, name: string) => user({ username: `system:serviceaccount:${ns}:${name}`, groups: ["system:serviceaccounts", `system:serviceaccounts:${ns}`] });

describe("RbacAuthorizer decisions", () => {
  const rbac = new RbacAuthorizer({ lister: world(), names });

  it.each<[string, AuthorizationAttributes, boolean]>([
    ["a group member gets a listed verb", csr({ user: user({ groups: ["readers"] }), verb: "list" }), true],
    ["a group member is refused an unlisted verb", csr({ user: user({ groups: ["readers"] }), verb: "delete" }), false],
    ["a user outside the group is refused", csr({ user: user({ groups: ["writers"] }) }), false],
    ["the wrong API group is refused", csr({ user: user({ groups: ["readers"] }), group: "other.io" }), false],
    ["the main resource does not grant a subresource", csr({ user: user({ groups: ["readers"] }), subresource: "status" }), false],
    ["a named subresource is granted", csr({ user: user({ username: "alice" }), verb: "update", subresource: "approval", name: "x" }), true],
    ["a subresource rule does not grant the main resource", csr({ user: user({ username: "alice" }), verb: "update", name: "x" }), false],
    ["a named subresource rule does not grant another subresource", csr({ user: user({ username: "alice" }), verb: "update", subresource: "status" }), false],
    ["resourceNames grant the listed name", csr({ user: user({ username: "alice" }), verb: "approve", resource: "signers", name: NODE_SIGNER }), true],
    ["resourceNames refuse another name", csr({ user: user({ username: "alice" }), verb: "approve", resource: "signers", name: names.signers.apiserverClient }), false],
    ["resourceNames refuse a request without a name", csr({ user: user({ username: "alice" }), verb: "approve", resource: "signers" }), false],
    ["*/status grants status of any resource", csr({ user: sa("ops", "statusbot"), verb: "update", subresource: "status" }), true],
    ["*/status does not grant another subresource", csr({ user: sa("ops", "statusbot"), verb: "update", subresource: "approval" }), false],
    ["*/status does not grant the main resource", csr({ user: sa("ops", "statusbot"), verb: "update" }), false],
    ["a ServiceAccount subject does not match an account of that name elsewhere", csr({ user: sa("team", "statusbot"), verb: "update", subresource: "status" }), false],
    ["wildcards grant any verb, group and resource", csr({ user: user({ groups: ["admins"] }), verb: "escalate", group: "x.io", resource: "things", namespace: "n" }), true],
    ["resource wildcards do not grant non-resource paths", { ...path("admin", "/metrics"), user: user({ username: "admin", groups: ["admins"] }) }, false],
    ["a listed path is granted", path("prom", "/metrics"), true],
    ["a prefix path with * is granted below it", path("prom", "/logs/kube/today"), true],
    ["a prefix path with * is granted at its root", path("prom", "/logs/"), true],
    ["a path outside the prefix is refused", path("prom", "/logsx"), false],
    ["an exact path is not a prefix", path("prom", "/metrics/extra"), false],
    ["a non-resource verb must match too", path("prom", "/metrics", "post"), false],
    ["a RoleBinding grants in its namespace", { user: user({ username: "dana" }), verb: "get", resourceRequest: true, group: "", resource: "pods", namespace: "team", name: "p" }, true],
    ["a RoleBinding of a ClusterRole does not grant in another namespace", { user: user({ username: "dana" }), verb: "get", resourceRequest: true, group: "", resource: "pods", namespace: "prod", name: "p" }, false],
    ["a RoleBinding does not grant at the cluster scope", { user: user({ username: "dana" }), verb: "get", resourceRequest: true, group: "", resource: "pods" }, false],
    ["a ServiceAccount in the binding's namespace gets the Role", { user: sa("team", "app"), verb: "get", resourceRequest: true, group: "", resource: "secrets", namespace: "team", name: "app-creds" }, true],
    ["the Role's resourceNames still apply", { user: sa("team", "app"), verb: "get", resourceRequest: true, group: "", resource: "secrets", namespace: "team", name: "db-creds" }, false],
    ["an account of that name in another namespace gets nothing", { user: sa("prod", "app"), verb: "get", resourceRequest: true, group: "", resource: "secrets", namespace: "team", name: "app-creds" }, false],
  ])("%s", (_name, attributes, allowed) => {
    const d = rbac.authorize(attributes);
    expect(d.allowed).toBe(allowed);
    expect(d.evaluationErrors).toEqual([]);
  });

  it("names the binding, role and subject that allowed a request", () => {
    expect(rbac.authorize(csr({ user: user({ groups: ["readers"] }) })).reason).toBe('RBAC: allowed by ClusterRoleBinding "csr-readers" of ClusterRole "csr-reader" to Group "readers"');
    expect(rbac.authorize({ user: sa("team", "app"), verb: "get", resourceRequest: true, group: "", resource: "secrets", namespace: "team", name: "app-creds" }).reason).toBe(
      'RBAC: allowed by RoleBinding "team/secrets" of Role "secret-reader" to ServiceAccount "team/app"',
    );
  });

  it("lists the rules that apply to a user in a namespace", () => {
    expect(rbac.rulesFor(user({ username: "dana" }), "team").rules).toEqual([{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }]);
    expect(rbac.rulesFor(user({ username: "dana" }), "prod").rules).toEqual([]);
  });
});

describe("RbacAuthorizer evaluation errors", () => {
  function authorizerWith(o: { clusterSubjects?: Subject[]; roleBindingSubjects?: Subject[]; roleRef?: { kind: string; name: string; apiGroup?: string } } = {}) {
    const lister = new StaticLister({
      clusterRoles: [clusterRole("reader", [rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })])],
      clusterRoleBindings: o.clusterSubjects ? [clusterRoleBinding("b", "reader", o.clusterSubjects)] : [],
      roleBindings: [
        {
          ...roleBinding("team", "rb", { kind: "ClusterRole", name: "reader" }, o.roleBindingSubjects ?? [userSubject("erin")]),
          ...(o.roleRef && { roleRef: { apiGroup: names.rbac, ...o.roleRef } as never }),
        },
      ],
    });
    return new RbacAuthorizer({ lister, names });
  }
  const pods = (ns: string | undefined, username = "erin"): AuthorizationAttributes => ({ user: user({ username }), verb: "get", resourceRequest: true, group: "", resource: "pods", ...(ns && { namespace: ns }) });

  it.each([
    ["a roleRef to a missing Role", { roleRef: { kind: "Role", name: "gone" } }, 'RoleBinding "team/rb": roles.rbac.authorization.platform.io "gone" not found in the namespace "team"'],
    ["a roleRef to a missing ClusterRole", { roleRef: { kind: "ClusterRole", name: "gone" } }, 'RoleBinding "team/rb": clusterroles.rbac.authorization.platform.io "gone" not found'],
    ["a roleRef of an unknown kind", { roleRef: { kind: "Policy", name: "reader" } }, 'RoleBinding "team/rb": roleRef kind "Policy" cannot be referenced by a RoleBinding'],
    ["a roleRef of another API group", { roleRef: { kind: "ClusterRole", name: "reader", apiGroup: "rbac.example.com" } }, 'RoleBinding "team/rb": roleRef apiGroup "rbac.example.com" is not "rbac.authorization.platform.io"'],
  ])("reports %s as an error, never a grant", (_name, o, error) => {
    const d = authorizerWith(o).authorize(pods("team"));
    expect(d).toEqual({ allowed: false, reason: `RBAC: ${error}`, evaluationErrors: [error] });
  });

  it("reports an unresolvable roleRef only to the users it names", () => {
    expect(authorizerWith({ roleRef: { kind: "Role", name: "gone" } }).authorize(pods("team", "someone-else")).evaluationErrors).toEqual([]);
  });

  it("reports a ClusterRoleBinding to a Role as an error", () => {
    const lister = new StaticLister({ roles: [role("team", "r", [rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })])], clusterRoleBindings: [clusterRoleBinding("crb", "r", [userSubject("erin")], { kind: "Role" })] });
    const d = new RbacAuthorizer({ lister, names }).authorize(pods("team"));
    expect(d.allowed).toBe(false);
    expect(d.evaluationErrors).toEqual(['ClusterRoleBinding "crb": roleRef kind "Role" cannot be referenced by a ClusterRoleBinding']);
  });

  it.each([
    ["an unrecognized subject kind", { kind: "Robot", name: "r2" }, 'RoleBinding "team/rb": subject kind "Robot" is not recognized (expected User, Group or ServiceAccount)'],
    ["a User subject with a namespace", { kind: "User", name: "erin", namespace: "team" }, 'RoleBinding "team/rb": subject User "erin" must not have a namespace (got "team")'],
    ["a Group subject with a namespace", { kind: "Group", name: "devs", namespace: "team" }, 'RoleBinding "team/rb": subject Group "devs" must not have a namespace (got "team")'],
    ["a subject without a name", { kind: "User", name: "" }, 'RoleBinding "team/rb": subject of kind "User" has no name'],
  ])("reports %s in its namespace, and does not grant", (_name, subject, error) => {
    const a = authorizerWith({ roleBindingSubjects: [subject as Subject] });
    expect(a.authorize(pods("team"))).toEqual({ allowed: false, reason: `RBAC: ${error}`, evaluationErrors: [error] });
    expect(a.authorize(pods("prod")).evaluationErrors).toEqual([]);
  });

  it("reports a ServiceAccount subject without a namespace in a ClusterRoleBinding", () => {
    const a = authorizerWith({ clusterSubjects: [{ kind: "ServiceAccount", name: "app" }] });
    expect(a.authorize(pods(undefined, "system:serviceaccount::app")).evaluationErrors).toEqual(['ClusterRoleBinding "b": subject ServiceAccount "app" needs a namespace']);
  });

  it("still grants through valid subjects of a binding that has an invalid one", () => {
    const a = authorizerWith({ roleBindingSubjects: [{ kind: "Robot", name: "r2" } as never, userSubject("erin")] });
    const d = a.authorize(pods("team"));
    expect(d.allowed).toBe(true);
    expect(d.evaluationErrors).toHaveLength(1);
  });
});

describe("RbacAuthorizer caching", () => {
  it("sees a new binding after the lister's version changes, and not before", () => {
    const lister = world();
    const rbac = new RbacAuthorizer({ lister, names });
    const attrs = csr({ user: user({ username: "newcomer" }) });
    expect(rbac.authorize(attrs).allowed).toBe(false);
    lister.objects.clusterRoleBindings!.push(clusterRoleBinding("newcomer", "csr-reader", [userSubject("newcomer")]));
    expect(rbac.authorize(attrs).allowed).toBe(false);
    lister.bump();
    expect(rbac.authorize(attrs).allowed).toBe(true);
  });

  it("keeps groups apart in its cache: the same user with other groups is decided again", () => {
    const rbac = new RbacAuthorizer({ lister: world(), names, cacheSize: 1 });
    expect(rbac.authorize(csr({ user: user({ groups: ["readers"] }) })).allowed).toBe(true);
    expect(rbac.authorize(csr({ user: user({ groups: ["writers"] }) })).allowed).toBe(false);
    expect(rbac.authorize(csr({ user: user({ groups: ["readers"] }) })).allowed).toBe(true);
  });

  it("refuses a cache size below 1", () => {
    expect(() => new RbacAuthorizer({ lister: world(), names, cacheSize: 0 })).toThrow("expected `cacheSize` to be an integer ≥ 1, got 0");
  });
});

describe("privilegedGroupsAuthorizer", () => {
  it("allows system:masters before RBAC is asked, and defers for everyone else", async () => {
    const a = privilegedGroupsAuthorizer(new RbacAuthorizer({ lister: new StaticLister(), names }));
    expect((await a.authorize(csr({ user: user({ groups: ["system:masters"] }), verb: "delete" }))).allowed).toBe(true);
    expect((await a.authorize(csr({ verb: "delete" }))).allowed).toBe(false);
  });
});

describe("forbiddenMessage", () => {
  it.each<[string, AuthorizationAttributes, string]>([
    [
      "a cluster-scoped subresource",
      { user: user(), verb: "update", resourceRequest: true, group: CERT, resource: "certificatesigningrequests", subresource: "approval", name: "x" },
      'certificatesigningrequests.certificates.platform.io "x" is forbidden: User "bob" cannot update resource "certificatesigningrequests/approval" in API group "certificates.platform.io" at the cluster scope',
    ],
    [
      "a namespaced core resource",
      { user: user(), verb: "get", resourceRequest: true, group: "", resource: "secrets", namespace: "team", name: "s" },
      'secrets "s" is forbidden: User "bob" cannot get resource "secrets" in API group "" in the namespace "team"',
    ],
    [
      "a collection",
      { user: user(), verb: "list", resourceRequest: true, group: CERT, resource: "clustertrustbundles" },
      'clustertrustbundles.certificates.platform.io is forbidden: User "bob" cannot list resource "clustertrustbundles" in API group "certificates.platform.io" at the cluster scope',
    ],
    ["a non-resource path", path("bob", "/metrics"), 'forbidden: User "bob" cannot get path "/metrics"'],
  ])("words %s as upstream does", (_name, attributes, message) => {
    expect(forbiddenMessage(attributes)).toBe(message);
  });

  it("appends the authorizer's reason", () => {
    expect(forbiddenMessage(path("bob", "/x"), "RBAC: oops")).toBe('forbidden: User "bob" cannot get path "/x": RBAC: oops');
  });
});

// RBAC escalation prevention: roles and bindings may grant only what the writer holds, unless escalate/bind allow more.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { AdmissionChain, type AdmissionAttributes, type AdmissionOperation } from "../../../src/apiserver/auth/admission.js";
import { rbacEscalationPlugin } from "../../../src/apiserver/auth/admission-rbac-escalation.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { PlatformError } from "../../../src/errors.js";
import { clusterRole, clusterRoleBinding, names, role, roleBinding, rule, StaticLister, user, userSubject, admissionOutcome } from "./fixtures.js";

const RBAC = names.rbac;
const CERT = names.certificates;
const readCsrs = rule({ apiGroups: [CERT], resources: ["certificatesigningrequests"], verbs: ["get", "list"] });
const deleteCsrs = rule({ apiGroups: [CERT], resources: ["certificatesigningrequests"], verbs: ["delete"] });
const writeRbac = rule({ apiGroups: [RBAC], resources: ["roles", "clusterroles", "rolebindings", "clusterrolebindings"], verbs: ["create", "update"] });
const lister = new StaticLister({
  roles: [role("team", "csr-reader", [readCsrs])],
  clusterRoles: [
    clusterRole("rbac-writer", [writeRbac]),
    clusterRole("csr-reader", [readCsrs]),
    clusterRole("csr-deleter", [deleteCsrs]),
    clusterRole("everything", [rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })]),
    clusterRole("bind-deleter", [rule({ apiGroups: [RBAC], resources: ["clusterroles"], verbs: ["bind"], resourceNames: ["csr-deleter"] })]),
    clusterRole("escalator", [rule({ apiGroups: [RBAC], resources: ["clusterroles"], verbs: ["escalate"] })]),
  ],
  clusterRoleBindings: [
    clusterRoleBinding("w1", "rbac-writer", [userSubject("alice"), userSubject("bob"), userSubject("eve")]),
    clusterRoleBinding("r1", "csr-reader", [userSubject("alice"), userSubject("bob"), userSubject("eve")]),
    clusterRoleBinding("b1", "bind-deleter", [userSubject("bob")]),
    clusterRoleBinding("e1", "escalator", [userSubject("eve")]),
  ],
});
const authorizer = new RbacAuthorizer({ names, lister });
const chain = new AdmissionChain({ names, authorizer, validating: [rbacEscalationPlugin(lister)] });

const attrs = (operation: AdmissionOperation, resource: string, username: string, name: string, namespace?: string): AdmissionAttributes => ({
  operation, group: RBAC, resource, name, user: user({ username, groups: ["system:authenticated"] }), dryRun: false,
  ...(namespace !== undefined && { namespace }),
});
const asObject = (o: object) => structuredClone(o) as unknown as ApiObject;

const outcome = (a: AdmissionAttributes, obj: ApiObject | undefined, old?: ApiObject) => admissionOutcome(chain, a, obj, old);

describe("RBAC escalation prevention", () => {
  it.each([
    ["creates a ClusterRole with permissions the writer holds", "alice", clusterRole("x", [readCsrs]), "allowed"],
    ["refuses a ClusterRole granting a verb the writer lacks", "alice", clusterRole("x", [deleteCsrs]), /FORBIDDEN: .*not currently held: delete on certificatesigningrequests/],
    ["refuses a wildcard ClusterRole to a writer without wildcards", "alice", clusterRole("x", [rule({ apiGroups: ["*"], resources: ["*"], verbs: ["*"] })]), /FORBIDDEN/],
    ["allows any ClusterRole to a writer with escalate", "eve", clusterRole("x", [deleteCsrs]), "allowed"],
  ] as const)("%s", async (_, who, obj, expected) => {
    const result = await outcome(attrs("CREATE", "clusterroles", who, "x"), asObject(obj));
    if (typeof expected === "string") expect(result).toBe(expected);
    else expect(result).toMatch(expected);
  });

  it.each([
    ["binds a ClusterRole whose permissions the writer holds", "alice", "csr-reader", "allowed"],
    ["refuses to bind cluster-wide power the writer lacks", "alice", "everything", /FORBIDDEN: .*needs bind on clusterroles "everything"/],
    ["refuses to bind csr-deleter without bind on it", "alice", "csr-deleter", /FORBIDDEN/],
    ["binds csr-deleter with bind on that role", "bob", "csr-deleter", "allowed"],
    ["bind on one role does not cover another", "bob", "everything", /FORBIDDEN/],
  ] as const)("%s", async (_, who, roleName, expected) => {
    const result = await outcome(attrs("CREATE", "clusterrolebindings", who, "b"), asObject(clusterRoleBinding("b", roleName, [userSubject("mallory")])));
    if (typeof expected === "string") expect(result).toBe(expected);
    else expect(result).toMatch(expected);
  });

  it("checks a RoleBinding against the permissions held in its namespace", async () => {
    const binding = asObject(roleBinding("team", "rb", { kind: "Role", name: "csr-reader" }, [userSubject("mallory")]));
    expect(await outcome(attrs("CREATE", "rolebindings", "alice", "rb", "team"), binding)).toBe("allowed");
    const power = asObject(roleBinding("team", "rb2", { kind: "ClusterRole", name: "csr-deleter" }, [userSubject("mallory")]));
    expect(await outcome(attrs("CREATE", "rolebindings", "alice", "rb2", "team"), power)).toMatch(/FORBIDDEN/);
  });

  it("lets an update that changes neither rules nor subjects through (labels, annotations)", async () => {
    const old = asObject(clusterRoleBinding("b", "everything", [userSubject("mallory")]));
    const next = asObject({ ...old, metadata: { ...old.metadata, labels: { a: "b" } } });
    expect(await outcome(attrs("UPDATE", "clusterrolebindings", "alice", "b"), next, old)).toBe("allowed");
    const moreSubjects = asObject({ ...old, subjects: [userSubject("mallory"), userSubject("alice")] });
    expect(await outcome(attrs("UPDATE", "clusterrolebindings", "alice", "b"), moreSubjects, old)).toMatch(/FORBIDDEN/);
  });
});

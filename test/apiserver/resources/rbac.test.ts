import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { groupNames } from "../../../src/api/group.js";
import { ctx, definition, names, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const RBAC = names.rbac;
const roleBinding = definition("RoleBinding");
const clusterRoleBinding = definition("ClusterRoleBinding");
const role = definition("Role");
const clusterRole = definition("ClusterRole");

interface BindingOptions {
  readonly roleRef?: Record<string, unknown> | null;
  readonly subjects?: Record<string, unknown>[];
}

function binding(def = roleBinding, o: BindingOptions = {}): ApiObject {
  const roleRef = o.roleRef === null ? undefined : { apiGroup: RBAC, kind: "ClusterRole", name: "view", ...o.roleRef };
  return object(def, { ...(roleRef ? { roleRef } : {}), subjects: o.subjects ?? [{ kind: "User", name: "alice" }] });
}

describe("RBAC definitions", () => {
  it.each([
    ["Role", "roles", true],
    ["ClusterRole", "clusterroles", false],
    ["RoleBinding", "rolebindings", true],
    ["ClusterRoleBinding", "clusterrolebindings", false],
  ])("serves %s as %s in the rbac group of the suffix", (kind, plural, namespaced) => {
    expect(definition(kind)).toMatchObject({ group: "rbac.authorization.platform.io", plural, namespaced, nameRule: "path-segment" });
    expect(definition(kind, groupNames("k8s.io")).group).toBe("rbac.authorization.k8s.io");
  });

  it("prints a binding's role and, wide, its subjects", () => {
    const obj = binding(roleBinding, {
      subjects: [
        { kind: "User", name: "alice" },
        { kind: "Group", name: "devs" },
        { kind: "ServiceAccount", name: "robot", namespace: "ci" },
      ],
    });
    obj.metadata.creationTimestamp = "2030-01-02T03:00:00Z";
    expect(roleBinding.row?.(obj, NOW)).toEqual(["x", "ClusterRole/view", "4m5s", "alice", "devs", "ci:robot"]);
    expect(roleBinding.columns?.map((c) => [c.name, c.priority])).toEqual([["Name", 0], ["Role", 0], ["Age", 0], ["Users", 1], ["Groups", 1], ["ServiceAccounts", 1]]);
  });
});

describe("RoleBinding and ClusterRoleBinding roleRef", () => {
  it.each([
    ["a RoleBinding to a Role", roleBinding, { kind: "Role" }],
    ["a RoleBinding to a ClusterRole", roleBinding, { kind: "ClusterRole" }],
    ["a ClusterRoleBinding to a ClusterRole", clusterRoleBinding, { kind: "ClusterRole" }],
  ])("accepts %s", (_, def, roleRef) => {
    expect(summary(runCreate(def, binding(def, { roleRef })).errors)).toEqual([]);
  });

  it.each([
    ["a binding without roleRef", roleBinding, null, "roleRef FieldValueRequired"],
    ["a roleRef in another group", roleBinding, { apiGroup: "rbac.authorization.k8s.io" }, "roleRef.apiGroup FieldValueNotSupported"],
    ["a roleRef without group", roleBinding, { apiGroup: "" }, "roleRef.apiGroup FieldValueNotSupported"],
    ["a roleRef to a Pod", roleBinding, { kind: "Pod" }, "roleRef.kind FieldValueNotSupported"],
    ["a ClusterRoleBinding to a Role", clusterRoleBinding, { kind: "Role" }, "roleRef.kind FieldValueNotSupported"],
    ["a roleRef without name", roleBinding, { name: "" }, "roleRef.name FieldValueRequired"],
    ["a roleRef name with a slash", roleBinding, { name: "a/b" }, "roleRef.name FieldValueInvalid"],
    ["a roleRef name that is a number", roleBinding, { name: 3 }, "roleRef.name FieldValueTypeInvalid"],
  ] as const)("refuses %s", (_, def, roleRef, expected) => {
    expect(summary(runCreate(def, binding(def, { roleRef: roleRef as Record<string, unknown> | null })).errors)).toEqual([expected]);
  });

  it("accepts new subjects on update", () => {
    const previous = stored(roleBinding, binding());
    const next = structuredClone(previous);
    next.subjects = [{ kind: "Group", name: "devs" }];
    expect(runUpdate(roleBinding, next, previous).errors).toEqual([]);
    expect(roleBinding.strategy.specChanged?.(next, previous)).toBe(true);
  });

  it.each([
    ["name", "edit"],
    ["kind", "Role"],
  ])("refuses a change of roleRef.%s as immutable", (field, value) => {
    const previous = stored(roleBinding, binding());
    const next = structuredClone(previous);
    (next.roleRef as Record<string, unknown>)[field] = value;
    const errors = runUpdate(roleBinding, next, previous).errors;
    expect(summary(errors)).toEqual(["roleRef FieldValueInvalid"]);
    expect(errors[0]?.message).toContain("field is immutable");
  });
});

describe("binding subjects", () => {
  it.each([
    ["a User", roleBinding, { kind: "User", name: "alice" }],
    ["a Group with the rbac group", roleBinding, { kind: "Group", name: "devs", apiGroup: RBAC }],
    ["a ServiceAccount without namespace in a RoleBinding", roleBinding, { kind: "ServiceAccount", name: "robot" }],
    ["a ServiceAccount with namespace in a ClusterRoleBinding", clusterRoleBinding, { kind: "ServiceAccount", name: "robot", namespace: "ci" }],
  ] as const)("accepts %s", (_, def, subject) => {
    expect(summary(runCreate(def, binding(def, { subjects: [{ ...subject }] })).errors)).toEqual([]);
  });

  it.each([
    ["an unknown kind", roleBinding, { kind: "Robot", name: "r2" }, "subjects[0].kind FieldValueNotSupported"],
    ["a User with a namespace", roleBinding, { kind: "User", name: "alice", namespace: "ci" }, "subjects[0].namespace FieldValueForbidden"],
    ["a Group with a namespace", roleBinding, { kind: "Group", name: "devs", namespace: "ci" }, "subjects[0].namespace FieldValueForbidden"],
    ["a User without name", roleBinding, { kind: "User" }, "subjects[0].name FieldValueRequired"],
    ["a User in another group", roleBinding, { kind: "User", name: "alice", apiGroup: "example.com" }, "subjects[0].apiGroup FieldValueNotSupported"],
    ["a ServiceAccount with an apiGroup", roleBinding, { kind: "ServiceAccount", name: "robot", apiGroup: RBAC }, "subjects[0].apiGroup FieldValueNotSupported"],
    ["a ServiceAccount with an invalid name", roleBinding, { kind: "ServiceAccount", name: "Robot!" }, "subjects[0].name FieldValueInvalid"],
    ["a ServiceAccount without namespace in a ClusterRoleBinding", clusterRoleBinding, { kind: "ServiceAccount", name: "robot" }, "subjects[0].namespace FieldValueRequired"],
    ["subjects that are not a list", roleBinding, "alice", "subjects FieldValueTypeInvalid"],
  ] as const)("refuses %s", (_, def, subject, expected) => {
    const obj = binding(def);
    obj.subjects = typeof subject === "string" ? subject : [{ ...subject }];
    expect(summary(runCreate(def, obj).errors)).toEqual([expected]);
  });

  it.each([
    ["User", RBAC],
    ["Group", RBAC],
    ["ServiceAccount", ""],
  ])("defaults the apiGroup of a %s subject on create and update", (kind, apiGroup) => {
    const { obj } = runCreate(roleBinding, binding(roleBinding, { subjects: [{ kind, name: "n" }] }));
    expect((obj.subjects as Record<string, unknown>[])[0]!.apiGroup).toBe(apiGroup);
    const next = structuredClone(obj);
    next.subjects = [{ kind, name: "m" }];
    runUpdate(roleBinding, next, obj);
    expect((next.subjects as Record<string, unknown>[])[0]!.apiGroup).toBe(apiGroup);
  });

  it("defaults to the rbac group of the configured suffix", () => {
    const k8s = groupNames("k8s.io");
    const def = definition("RoleBinding", k8s);
    const obj = object(def, { roleRef: { apiGroup: k8s.rbac, kind: "Role", name: "r" }, subjects: [{ kind: "User", name: "alice" }] });
    const { errors } = runCreate(def, obj, ctx({ names: k8s }));
    expect(errors).toEqual([]);
    expect((obj.subjects as Record<string, unknown>[])[0]!.apiGroup).toBe("rbac.authorization.k8s.io");
  });
});

describe("Role and ClusterRole rules", () => {
  const rolesOf = (def = role, rules: unknown, extra: Record<string, unknown> = {}) => summary(runCreate(def, object(def, { rules, ...extra })).errors);

  it.each([
    ["a resource rule in a Role", role, [{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]],
    ["a rule with resource names", role, [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a"] }]],
    ["a non-resource rule in a ClusterRole", clusterRole, [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }]],
    ["no rules at all", role, []],
  ] as const)("accepts %s", (_, def, rules) => {
    expect(rolesOf(def, rules)).toEqual([]);
  });

  it.each([
    ["a rule without verbs", role, [{ apiGroups: [""], resources: ["pods"] }], ["rules[0].verbs FieldValueRequired"]],
    ["a resource rule without apiGroups", role, [{ verbs: ["get"], resources: ["pods"] }], ["rules[0].apiGroups FieldValueRequired"]],
    ["a resource rule without resources", role, [{ verbs: ["get"], apiGroups: [""] }], ["rules[0].resources FieldValueRequired"]],
    ["a non-resource rule in a Role", role, [{ verbs: ["get"], nonResourceURLs: ["/healthz"] }], ["rules[0].nonResourceURLs FieldValueInvalid"]],
    ["a rule on resources and URLs", clusterRole, [{ verbs: ["get"], resources: ["pods"], nonResourceURLs: ["/x"] }], ["rules[0].nonResourceURLs FieldValueInvalid"]],
    ["verbs as one string", role, [{ verbs: "get", apiGroups: [""], resources: ["pods"] }], ["rules[0].verbs FieldValueTypeInvalid"]],
  ] as const)("refuses %s", (_, def, rules, expected) => {
    expect(rolesOf(def, rules)).toEqual(expected);
  });

  it.each([
    ["a label selector", { clusterRoleSelectors: [{ matchLabels: { "rbac.example.com/aggregate": "true" } }] }],
    ["an expression with values", { clusterRoleSelectors: [{ matchExpressions: [{ key: "tier", operator: "In", values: ["a"] }] }] }],
    ["an Exists expression", { clusterRoleSelectors: [{ matchExpressions: [{ key: "tier", operator: "Exists" }] }] }],
  ])("accepts an aggregation rule with %s", (_, aggregationRule) => {
    expect(rolesOf(clusterRole, [], { aggregationRule })).toEqual([]);
  });

  it.each([
    ["no selectors", {}, "aggregationRule.clusterRoleSelectors FieldValueRequired"],
    ["an unknown operator", { clusterRoleSelectors: [{ matchExpressions: [{ key: "t", operator: "Near", values: ["a"] }] }] }, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator FieldValueNotSupported"],
    ["In without values", { clusterRoleSelectors: [{ matchExpressions: [{ key: "t", operator: "In" }] }] }, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values FieldValueRequired"],
    ["Exists with values", { clusterRoleSelectors: [{ matchExpressions: [{ key: "t", operator: "Exists", values: ["a"] }] }] }, "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values FieldValueForbidden"],
    ["an invalid label key", { clusterRoleSelectors: [{ matchLabels: { "bad key!": "x" } }] }, "aggregationRule.clusterRoleSelectors[0].matchLabels FieldValueInvalid"],
  ])("refuses an aggregation rule with %s", (_, aggregationRule, expected) => {
    expect(rolesOf(clusterRole, [], { aggregationRule })).toEqual([expected]);
  });
});

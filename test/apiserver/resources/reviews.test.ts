import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { definition, names, object, runCreate, summary } from "./fixtures.js";

describe.each([
  ["TokenReview", "tokenreviews", "authentication.platform.io"],
  ["SelfSubjectReview", "selfsubjectreviews", "authentication.platform.io"],
  ["SubjectAccessReview", "subjectaccessreviews", "authorization.platform.io"],
  ["SelfSubjectAccessReview", "selfsubjectaccessreviews", "authorization.platform.io"],
])("%s definition", (kind, plural, group) => {
  it("is a cluster-scoped create-only kind of its group", () => {
    expect(definition(kind)).toMatchObject({ group, version: "v1", plural, namespaced: false, createOnly: true, verbs: ["create"] });
    expect(definition(kind, groupNames("k8s.io")).group).toBe(group.replace("platform.io", "k8s.io"));
  });
});

describe("TokenReview", () => {
  const def = definition("TokenReview");

  it("accepts a token and drops a status the client sent", () => {
    const { obj, errors } = runCreate(def, object(def, { spec: { token: "abc", audiences: ["api"] }, status: { authenticated: true } }));
    expect(errors).toEqual([]);
    expect(obj).not.toHaveProperty("status");
  });

  it.each([
    ["a review without token", { spec: {} }, "spec.token FieldValueRequired"],
    ["a review without spec", {}, "spec.token FieldValueRequired"],
    ["a numeric token", { spec: { token: 5 } }, "spec.token FieldValueTypeInvalid"],
    ["audiences as one string", { spec: { token: "abc", audiences: "api" } }, "spec.audiences FieldValueTypeInvalid"],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, object(def, body)).errors)).toEqual([expected]);
  });
});

describe("SelfSubjectReview", () => {
  const def = definition("SelfSubjectReview");

  it("accepts an empty review and drops a user the client claimed", () => {
    const { obj, errors } = runCreate(def, object(def, { status: { userInfo: { username: "system:admin" } } }));
    expect(errors).toEqual([]);
    expect(obj).not.toHaveProperty("status");
  });

  it("refuses a status that is not an object", () => {
    expect(summary(def.strategy.validate(object(def, { status: "me" }), { now: new Date(0), names: groupNames() }))).toEqual(["status FieldValueTypeInvalid"]);
  });
});

describe("SubjectAccessReview", () => {
  const def = definition("SubjectAccessReview");
  const review = (spec: Record<string, unknown> | undefined) => object(def, spec ? { spec } : {});

  it.each([
    ["a resource question for a user", { user: "alice", resourceAttributes: { verb: "get", resource: "pods", namespace: "a" } }],
    ["a non-resource question for a group", { groups: ["devs"], nonResourceAttributes: { verb: "get", path: "/healthz" } }],
  ])("accepts %s", (_, spec) => {
    expect(runCreate(def, review(spec)).errors).toEqual([]);
  });

  it.each([
    ["a review without spec", undefined, "spec FieldValueRequired"],
    ["both kinds of attributes", { user: "a", resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/" } }, "spec.nonResourceAttributes FieldValueInvalid"],
    ["no attributes", { user: "a" }, "spec.resourceAttributes FieldValueInvalid"],
    ["neither user nor groups", { resourceAttributes: { verb: "get" } }, "spec.user FieldValueInvalid"],
    ["an empty group list and no user", { groups: [], resourceAttributes: { verb: "get" } }, "spec.user FieldValueInvalid"],
    ["groups as one string", { groups: "devs", resourceAttributes: { verb: "get" } }, "spec.groups FieldValueTypeInvalid"],
  ])("refuses %s", (_, spec, expected) => {
    expect(summary(runCreate(def, review(spec)).errors)).toEqual([expected]);
  });
});

describe("SelfSubjectAccessReview", () => {
  const def = definition("SelfSubjectAccessReview");
  const review = (spec: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}) => object(def, { ...(spec ? { spec } : {}), ...extra });

  it.each([
    ["a resource question", { resourceAttributes: { verb: "get", group: names.certificates, resource: "certificatesigningrequests", name: "a" } }],
    ["a non-resource question", { nonResourceAttributes: { verb: "get", path: "/healthz" } }],
  ])("accepts %s and drops a status the client sent", (_, spec) => {
    const { obj, errors } = runCreate(def, review(spec, { status: { allowed: true } }));
    expect(errors).toEqual([]);
    expect(obj).not.toHaveProperty("status");
  });

  it.each([
    ["a review without spec", undefined, "spec FieldValueRequired"],
    ["both kinds of attributes", { resourceAttributes: { verb: "get" }, nonResourceAttributes: { path: "/" } }, "spec.nonResourceAttributes FieldValueInvalid"],
    ["no attributes", {}, "spec.resourceAttributes FieldValueInvalid"],
    ["a verb that is not a string", { resourceAttributes: { verb: 1 } }, "spec.resourceAttributes.verb FieldValueTypeInvalid"],
  ])("refuses %s", (_, spec, expected) => {
    expect(summary(runCreate(def, review(spec)).errors)).toEqual([expected]);
  });
});

import { describe, expect, it } from "vitest";
import { tokenRequestStrategy } from "../../../src/apiserver/registry/resources/index.js";
import type { ApiObject } from "../../../src/api/meta.js";
import { ctx, definition, NOW, runCreate, object, summary } from "./fixtures.js";

const def = definition("ServiceAccount");

describe("ServiceAccount", () => {
  it("is a namespaced core kind with the sa short name, the token action, and deletes that return the object", () => {
    expect(def).toMatchObject({ group: "", version: "v1", plural: "serviceaccounts", shortNames: ["sa"], namespaced: true, deleteReturnsObject: true, actions: ["token"] });
  });

  it("prints the number of secrets", () => {
    const obj = object(def, { secrets: [{ name: "a" }, { name: "b" }] }, { creationTimestamp: "2030-01-01T03:04:05Z" });
    expect(def.row?.(obj, NOW)).toEqual(["x", 2, "24h"]);
  });

  it.each([
    ["an empty account", {}],
    ["named secrets and pull secrets", { secrets: [{ name: "token" }], imagePullSecrets: [{ name: "registry" }] }],
    ["automount switched off", { automountServiceAccountToken: false }],
  ])("accepts %s", (_, body) => {
    expect(runCreate(def, object(def, body)).errors).toEqual([]);
  });

  it.each([
    ["a secret without name", { secrets: [{ namespace: "default" }] }, "secrets[0].name FieldValueRequired"],
    ["a pull secret without name", { imagePullSecrets: [{ name: "ok" }, {}] }, "imagePullSecrets[1].name FieldValueRequired"],
    ["automount as a string", { automountServiceAccountToken: "true" }, "automountServiceAccountToken FieldValueTypeInvalid"],
    ["secrets that are not a list", { secrets: { name: "a" } }, "secrets FieldValueTypeInvalid"],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, object(def, body)).errors)).toEqual([expected]);
  });
});

describe("TokenRequest (the token action's body)", () => {
  const request = (spec: Record<string, unknown> | undefined): ApiObject => ({
    apiVersion: "authentication.platform.io/v1",
    kind: "TokenRequest",
    metadata: { name: "robot", namespace: "default" },
    ...(spec ? { spec } : {}),
    status: { token: "forged", expirationTimestamp: "2030-01-01T00:00:00Z" },
  });
  const run = (spec: Record<string, unknown> | undefined) => {
    const obj = request(spec);
    tokenRequestStrategy.prepareForCreate(obj, ctx());
    return { obj, errors: summary(tokenRequestStrategy.validate(obj, ctx())) };
  };

  it("defaults the lifetime to an hour and drops a status the client sent", () => {
    const { obj, errors } = run({ audiences: ["api"] });
    expect(errors).toEqual([]);
    expect(obj.spec).toEqual({ audiences: ["api"], expirationSeconds: 3600 });
    expect(obj).not.toHaveProperty("status");
  });

  it.each([
    ["no spec at all", undefined],
    ["the shortest lifetime", { expirationSeconds: 600 }],
    ["the longest lifetime", { expirationSeconds: 2 ** 32 }],
    ["a token bound to a Pod", { boundObjectRef: { kind: "Pod", name: "p", uid: "u" } }],
    ["a token bound to a Secret", { boundObjectRef: { kind: "Secret", name: "s" } }],
  ])("accepts %s", (_, spec) => {
    expect(run(spec).errors).toEqual([]);
  });

  it.each([
    ["a lifetime below ten minutes", { expirationSeconds: 599 }, "spec.expirationSeconds FieldValueInvalid"],
    ["a lifetime above 2^32 seconds", { expirationSeconds: 2 ** 32 + 1 }, "spec.expirationSeconds FieldValueInvalid"],
    ["a token bound to a Node", { boundObjectRef: { kind: "Node", name: "n" } }, "spec.boundObjectRef.kind FieldValueNotSupported"],
    ["a bound object without name", { boundObjectRef: { kind: "Pod" } }, "spec.boundObjectRef.name FieldValueRequired"],
    ["audiences as one string", { audiences: "api" }, "spec.audiences FieldValueTypeInvalid"],
    ["a string lifetime", { expirationSeconds: "3600" }, "spec.expirationSeconds FieldValueTypeInvalid"],
  ])("refuses %s", (_, spec, expected) => {
    expect(run(spec).errors).toEqual([expected]);
  });
});

import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { b64, definition, names, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("Secret");
const secret = (body: Record<string, unknown>, annotations?: Record<string, string>) => object(def, body, annotations ? { annotations } : {});
const MiB = 1024 * 1024;

describe("Secret create", () => {
  it("is a namespaced core kind that prints type and entry count", () => {
    expect(def).toMatchObject({ group: "", version: "v1", plural: "secrets", namespaced: true });
    const { obj } = runCreate(def, secret({ data: { a: b64("1"), b: b64("2") } }));
    expect(def.row?.(obj, NOW)).toEqual(["x", "Opaque", 2, "<unknown>"]);
  });

  it("folds stringData into data as base64, over data's own entry, and never keeps stringData", () => {
    const { obj, errors } = runCreate(def, secret({ data: { a: b64("old"), b: b64("kept") }, stringData: { a: "new" } }));
    expect(errors).toEqual([]);
    expect(obj.data).toEqual({ a: b64("new"), b: b64("kept") });
    expect(obj).not.toHaveProperty("stringData");
  });

  it.each([
    ["keys with dots, dashes and underscores", { data: { "tls.crt": b64("x"), "a-b_c": "" } }],
    ["exactly 1 MiB of data", { data: { big: Buffer.alloc(MiB).toString("base64") } }],
    ["a TLS secret with its two keys", { type: `${names.suffix}/tls`, data: { "tls.crt": b64("c"), "tls.key": b64("k") } }],
  ])("accepts %s", (_, body) => {
    expect(runCreate(def, secret(body)).errors).toEqual([]);
  });

  it("accepts a service-account token secret that names its account", () => {
    const obj = secret({ type: `${names.suffix}/service-account-token` }, { [`${names.suffix}/service-account.name`]: "robot" });
    expect(runCreate(def, obj).errors).toEqual([]);
  });

  it.each([
    ["a key with a slash", { data: { "a/b": b64("x") } }, ["data FieldValueInvalid"]],
    ["the key ..", { data: { "..": b64("x") } }, ["data FieldValueInvalid"]],
    ["a key starting with ..", { data: { "..a": b64("x") } }, ["data FieldValueInvalid"]],
    ["a key with a space", { stringData: { "a b": "x" } }, ["data FieldValueInvalid"]],
    ["a value that is not base64", { data: { a: "not base64!" } }, ["data[a] FieldValueInvalid"]],
    ["a value with bad padding", { data: { a: "YQ" } }, ["data[a] FieldValueInvalid"]],
    ["more than 1 MiB of data", { data: { a: Buffer.alloc(MiB).toString("base64"), b: b64("1") } }, ["data FieldValueTooLong"]],
    ["a TLS secret without its key", { type: `${names.suffix}/tls`, data: { "tls.crt": b64("c") } }, ["data[tls.key] FieldValueRequired"]],
    ["a service-account token secret without its account", { type: `${names.suffix}/service-account-token` }, [`metadata.annotations[${names.suffix}/service-account.name] FieldValueRequired`]],
    ["a numeric value", { data: { a: 1 } }, ["data[a] FieldValueTypeInvalid"]],
    ["immutable as a string", { immutable: "true" }, ["immutable FieldValueTypeInvalid"]],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, secret(body)).errors)).toEqual(expected);
  });
});

/** A change that sets one top-level field. */
function set(field: string, value: unknown): (next: ApiObject) => void {
  return (next) => {
    next[field] = value;
  };
}

describe("Secret update", () => {
  const start = (body: Record<string, unknown>): [ApiObject, ApiObject] => {
    const previous = stored(def, secret({ data: { a: b64("1") }, ...body }));
    return [structuredClone(previous), previous];
  };

  it("accepts new data in a mutable secret", () => {
    const [next, previous] = start({});
    next.data = { a: b64("2") };
    expect(runUpdate(def, next, previous).errors).toEqual([]);
  });

  it("accepts label changes and making a secret immutable", () => {
    const [next, previous] = start({});
    next.metadata.labels = { a: "b" };
    next.immutable = true;
    expect(runUpdate(def, next, previous).errors).toEqual([]);
  });

  it.each([
    ["new data in an immutable secret", { immutable: true }, set("data", { a: b64("2") }), "data FieldValueForbidden"],
    ["new stringData in an immutable secret", { immutable: true }, set("stringData", { b: "x" }), "data FieldValueForbidden"],
    ["making an immutable secret mutable", { immutable: true }, set("immutable", false), "immutable FieldValueForbidden"],
    ["a type change", {}, set("type", "example.com/other"), "type FieldValueInvalid"],
  ])("refuses %s", (_, body, change, expected) => {
    const [next, previous] = start(body);
    change(next);
    expect(summary(runUpdate(def, next, previous).errors)).toEqual([expected]);
  });
});

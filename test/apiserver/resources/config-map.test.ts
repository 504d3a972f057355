import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { b64, definition, NOW, object, runCreate, runUpdate, stored, summary } from "./fixtures.js";

const def = definition("ConfigMap");
const configMap = (body: Record<string, unknown>) => object(def, body);
const MiB = 1024 * 1024;

describe("ConfigMap create", () => {
  it("is a namespaced core kind, cm for short, that prints the entries of both maps", () => {
    expect(def).toMatchObject({ group: "", version: "v1", plural: "configmaps", namespaced: true, shortNames: ["cm"] });
    const { obj, errors } = runCreate(def, configMap({ data: { a: "1", b: "2" }, binaryData: { c: b64("3") } }));
    expect(errors).toEqual([]);
    expect(def.row?.(obj, NOW)).toEqual(["x", 3, "<unknown>"]);
  });

  it.each([
    ["an empty map", {}],
    ["keys with dots, dashes and underscores", { data: { "ca.crt": "x", "a-b_c": "" }, binaryData: { "blob.bin": b64("y") } }],
    ["text of exactly 1 MiB", { data: { big: "a".repeat(MiB) } }],
    ["an immutable map", { data: { a: "1" }, immutable: true }],
  ])("accepts %s", (_, body) => {
    expect(runCreate(def, configMap(body)).errors).toEqual([]);
  });

  it.each([
    ["a key with a slash", { data: { "a/b": "x" } }, ["data[a/b] FieldValueInvalid"]],
    ["the key ..", { binaryData: { "..": b64("x") } }, ["binaryData[..] FieldValueInvalid"]],
    ["a key in both maps", { data: { a: "x" }, binaryData: { a: b64("y") } }, ["data[a] FieldValueInvalid"]],
    ["binary data that is not base64", { binaryData: { a: "not base64!" } }, ["binaryData[a] FieldValueInvalid"]],
    // Text counts in UTF-8 bytes: 2 bytes a character here.
    ["more than 1 MiB of text and binary data", { data: { a: "é".repeat(MiB / 2) }, binaryData: { b: b64("1") } }, ["data FieldValueTooLong"]],
    ["a numeric value", { data: { a: 1 } }, ["data[a] FieldValueTypeInvalid"]],
    ["data as a list", { data: ["a"] }, ["data FieldValueTypeInvalid"]],
    ["immutable as a string", { immutable: "true" }, ["immutable FieldValueTypeInvalid"]],
  ])("refuses %s", (_, body, expected) => {
    expect(summary(runCreate(def, configMap(body)).errors)).toEqual(expected);
  });
});

describe("ConfigMap update", () => {
  const start = (body: Record<string, unknown>): [ApiObject, ApiObject] => {
    const previous = stored(def, configMap({ data: { a: "1" }, binaryData: { b: b64("2") }, ...body }));
    return [structuredClone(previous), previous];
  };

  it.each([
    ["new data in a mutable map", {}, (n: ApiObject): void => void (n.data = { a: "2" })],
    ["making a map immutable", {}, (n: ApiObject): void => void (n.immutable = true)],
    ["labels on an immutable map", { immutable: true }, (n: ApiObject): void => void (n.metadata.labels = { a: "b" })],
  ])("accepts %s", (_, body, change) => {
    const [next, previous] = start(body);
    change(next);
    expect(runUpdate(def, next, previous).errors).toEqual([]);
  });

  it.each([
    ["new data in an immutable map", (n: ApiObject): void => void (n.data = { a: "2" }), ["data FieldValueForbidden"]],
    ["new binary data in an immutable map", (n: ApiObject): void => void (n.binaryData = {}), ["binaryData FieldValueForbidden"]],
    ["making an immutable map mutable", (n: ApiObject): void => void delete n.immutable, ["immutable FieldValueForbidden"]],
  ])("refuses %s", (_, change, expected) => {
    const [next, previous] = start({ immutable: true });
    change(next);
    expect(summary(runUpdate(def, next, previous).errors)).toEqual(expected);
  });
});

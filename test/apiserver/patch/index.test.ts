import { describe, expect, it } from "vitest";
import { schemaRegistry } from "../../../src/api/schema.js";
import { applyPatch, patchTypeOf, PATCH_CONTENT_TYPES } from "../../../src/apiserver/patch/index.js";
import { isPlatformError, type ErrorCode } from "../../../src/errors.js";
import { serviceAccount } from "../../fixtures/objects.js";

const registry = schemaRegistry();

/** ServiceAccount ns/sa with the named secrets. */
const withSecrets = (secrets: string[] = ["s1"]): Record<string, unknown> => serviceAccount({ name: "sa", namespace: "ns", extra: { secrets: secrets.map((name) => ({ name })) } });

function refusal(run: () => unknown): { code: ErrorCode; message: string } {
  try {
    run();
  } catch (e) {
    if (isPlatformError(e)) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error("the patch was applied");
}

const secretNames = (obj: Record<string, unknown>) => (obj.secrets as { name: string }[]).map((s) => s.name);

describe("PATCH dispatch by content type", () => {
  it.each([
    ["application/json-patch+json", "json"],
    ["application/merge-patch+json; charset=utf-8", "merge"],
    ["Application/Strategic-Merge-Patch+JSON", "strategic"],
  ] as const)("reads %s as a %s patch", (contentType, type) => {
    expect(patchTypeOf(contentType)).toBe(type);
  });

  it.each([["application/json"], ["application/apply-patch+yaml"], [undefined]])("answers %s with UNSUPPORTED_MEDIA_TYPE", (contentType) => {
    const r = refusal(() => applyPatch(contentType, withSecrets(), "{}"));
    expect(r.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(r.message).toContain(PATCH_CONTENT_TYPES.strategic);
  });

  it.each([
    ["a JSON patch", PATCH_CONTENT_TYPES.json, '[{"op":"add","path":"/secrets/-","value":{"name":"s2"}}]', ["s1", "s2"]],
    ["a merge patch, which replaces lists", PATCH_CONTENT_TYPES.merge, '{"secrets":[{"name":"s2"}]}', ["s2"]],
    ["a strategic merge patch, which merges by name", PATCH_CONTENT_TYPES.strategic, '{"secrets":[{"name":"s2"}]}', ["s2", "s1"]],
  ])("applies %s given as text", (_n, contentType, body, names) => {
    const out = applyPatch(contentType, withSecrets(), body, { schema: registry.lookup("", "ServiceAccount") });
    expect(secretNames(out)).toEqual(names);
  });

  it("accepts the body as bytes or as an already parsed value", () => {
    const schema = registry.lookup("", "ServiceAccount");
    const bytes = new TextEncoder().encode('{"secrets":[{"name":"s0"}]}');
    expect(secretNames(applyPatch(PATCH_CONTENT_TYPES.strategic, withSecrets(), bytes, { schema }))).toEqual(["s0", "s1"]);
    expect(secretNames(applyPatch(PATCH_CONTENT_TYPES.merge, withSecrets(), { secrets: [] }))).toEqual([]);
  });

  it("refuses a strategic merge patch for a kind without schema", () => {
    const r = refusal(() => applyPatch(PATCH_CONTENT_TYPES.strategic, { apiVersion: "example.com/v1", kind: "Widget", metadata: {} }, "{}"));
    expect(r).toEqual({ code: "BAD_REQUEST", message: "strategic merge patch is not supported for Widget; use --type=merge or --type=json" });
  });

  it.each([
    ["a body that is not JSON", PATCH_CONTENT_TYPES.merge, "{secrets:", "BAD_REQUEST", /not valid JSON/],
    ["an empty body", PATCH_CONTENT_TYPES.json, "  ", "BAD_REQUEST", /empty/],
    ["a merge patch that is not an object", PATCH_CONTENT_TYPES.merge, '["x"]', "PATCH_INVALID", /merge patch must be a JSON object/],
    ["a JSON patch that replaces the object with a string", PATCH_CONTENT_TYPES.json, '[{"op":"replace","path":"","value":"x"}]', "PATCH_INVALID", /must be a JSON object/],
    ["an operation that repeats a member (RFC 6902 A.13)", PATCH_CONTENT_TYPES.json, '[{"op":"add","path":"/baz","value":"qux","op":"remove"}]', "PATCH_INVALID", /repeat a member: \[0\]\.op/],
  ] as const)("refuses %s", (_n, contentType, body, code, message) => {
    const r = refusal(() => applyPatch(contentType, withSecrets(), body, { schema: registry.lookup("", "ServiceAccount") }));
    expect(r.code).toBe(code);
    expect(r.message).toMatch(message);
  });
});

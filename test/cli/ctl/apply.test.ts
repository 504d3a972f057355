// Client-side apply's three-way merge patch and the last-applied annotation.
import { describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import { applyMergePatch } from "../../../src/apiserver/patch/index.js";
import { lastAppliedAnnotation, threeWayMergePatch, withLastApplied } from "../../../src/cli/ctl/apply.js";

type Doc = Record<string, unknown>;

const CASES: [string, Doc | undefined, Doc, Doc, Doc][] = [
  ["adds a new field", { a: 1 }, { a: 1, b: 2 }, { a: 1, x: 9 }, { b: 2 }],
  ["changes a field", { a: 1 }, { a: 2 }, { a: 1 }, { a: 2 }],
  ["removes a field dropped from the manifest", { a: 1, b: 2 }, { a: 1 }, { a: 1, b: 2, x: 9 }, { b: null }],
  ["keeps fields others set", { a: 1 }, { a: 1 }, { a: 1, x: 9 }, {}],
  ["does not remove what is already gone", { a: 1, b: 2 }, { a: 1 }, { a: 1 }, {}],
  ["recurses into maps", { m: { a: "1", b: "2" } }, { m: { a: "1", c: "3" } }, { m: { a: "1", b: "2", z: "x" } }, { m: { b: null, c: "3" } }],
  ["replaces lists whole", { l: [1, 2] }, { l: [1, 3] }, { l: [1, 2] }, { l: [1, 3] }],
  ["resets a changed live value to the manifest", { a: 1 }, { a: 1 }, { a: 5 }, { a: 1 }],
  ["adds everything without a recorded original", undefined, { a: 1, b: { c: 2 } }, { a: 1, b: { d: 3 } }, { b: { c: 2 } }],
];

describe("threeWayMergePatch", () => {
  it.each(CASES)("%s", (_name, original, modified, current, patch) => {
    const result = threeWayMergePatch(original, modified, current);
    expect(result).toEqual(patch);
    // Applying the patch gives the manifest's fields on top of what others set.
    const applied = applyMergePatch(current as never, result as never) as Doc;
    expect(applied).toMatchObject(modified);
  });
});

describe("the last-applied annotation", () => {
  it("is named after the group suffix", () => {
    expect(lastAppliedAnnotation(groupNames("example.org"))).toBe("platformctl.example.org/last-applied-configuration");
  });

  it("records the manifest without the annotation itself", () => {
    const key = lastAppliedAnnotation(groupNames());
    const manifest: ApiObject = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a", annotations: { keep: "me", [key]: "stale" } } };
    const out = withLastApplied(manifest, key);
    expect(out.metadata.annotations?.keep).toBe("me");
    expect(JSON.parse(out.metadata.annotations![key]!)).toEqual({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a", annotations: { keep: "me" } } });
    const bare = withLastApplied({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "b" } }, key);
    expect(JSON.parse(bare.metadata.annotations![key]!)).toEqual({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "b" } });
  });
});

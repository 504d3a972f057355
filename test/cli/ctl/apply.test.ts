// Client-side apply's three-way merge patch and the last-applied annotation; the warning for objects apply did not make
// (a real process against `platform-ca up`, beside kubectl's warning for the same case).
import { describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { groupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import { applyMergePatch } from "../../../src/apiserver/patch/index.js";
import { lastAppliedAnnotation, threeWayMergePatch, withLastApplied } from "../../../src/cli/ctl/apply.js";
import { useUpServer } from "./fixtures.js";
import { serviceAccount } from "../../fixtures/objects.js";

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

describe("applying to an object that apply did not make", () => {
  const server = useUpServer();
  const sa = (name: string, labels: Record<string, string> = {}) => toYaml(serviceAccount({ name, labels }));

  it("warns once, on stderr, as kubectl does, then records the annotation", async () => {
    expect((await server.up.ctl(["create", "-f", "-"], { stdin: sa("bot") })).code).toBe(0);
    const first = await server.up.ctl(["apply", "-f", "-"], { stdin: sa("bot", { team: "a" }) });
    expect([first.code, first.stdout]).toEqual([0, "serviceaccount/bot configured\n"]);
    expect(first.stderr).toBe(
      "Warning: resource serviceaccounts/bot is missing the platformctl.platform.io/last-applied-configuration annotation which is required by platformctl apply. " +
        "platformctl apply should only be used on resources created declaratively by platformctl apply. The missing annotation will be patched automatically.\n",
    );
    // kubectl's wording, with its names (and its create --save-config, which platformctl has not).
    expect((await server.up.kubectl(["create", "-f", "-"], sa("kbot"))).code).toBe(0);
    const theirs = await server.up.kubectl(["apply", "-f", "-"], sa("kbot", { team: "a" }));
    const translated = theirs.stderr.replaceAll("kubectl.kubernetes.io", "platformctl.platform.io").replaceAll("kubectl apply", "platformctl apply").replace("either kubectl create --save-config or ", "");
    expect(translated.replace("kbot", "bot")).toBe(first.stderr);
    // The annotation is there now: no warning.
    const again = await server.up.ctl(["apply", "-f", "-"], { stdin: sa("bot", { team: "b" }) });
    expect([again.code, again.stdout, again.stderr]).toEqual([0, "serviceaccount/bot configured\n", ""]);
  });

  it("does not warn for an object apply created", async () => {
    expect((await server.up.ctl(["apply", "-f", "-"], { stdin: sa("applied") })).stderr).toBe("");
    const r = await server.up.ctl(["apply", "-f", "-"], { stdin: sa("applied", { team: "a" }) });
    expect([r.stdout, r.stderr]).toEqual(["serviceaccount/applied configured\n", ""]);
  });
});

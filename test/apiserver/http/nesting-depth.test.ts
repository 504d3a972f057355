// Nesting depth: bounded once where bodies are decoded (JSON, YAML) and where a patch produces an object, so
// that everything accepted can still be copied, stored, patched and printed as YAML.
import fc from "fast-check";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import { parse as fromYaml, stringify as toYaml } from "yaml";
import { MAX_NESTING_DEPTH, parsePlainJson, parsePlainYaml, plainValueProblem, yamlNestingBound } from "../../../src/plain-data.js";
import { call } from "../http-client.js";
import { sharedServer } from "../fixtures.js";
import { controllerRevision } from "../../fixtures/objects.js";

const shared = sharedServer();
const CR = "/apis/apps/v1/namespaces/default/controllerrevisions";

/** An object nested `depth` levels deep (the outermost object is level 1), alternating objects and arrays when `mixed`. */
function nested(depth: number, mixed = false): unknown {
  let v: unknown = "leaf";
  for (let i = 0; i < depth; i++) v = mixed && i % 2 ? [v] : { a: v };
  return v;
}

/** A ControllerRevision whose whole body is `depth` levels deep (the object, then data's levels). */
const revision = (name: string, depth: number) => controllerRevision({ name, data: nested(depth - 1) });

describe("the nesting bound of decoded values", () => {
  it("refuses exactly the values deeper than the bound, from JSON and from YAML", () => {
    /** What a parse made of the text: the same value, or the nesting refusal (vitest's own deep equality recurses too far here). */
    const outcome = (parse: (text: string) => unknown, text: string, value: unknown) => {
      try {
        return isDeepStrictEqual(parse(text), value) ? "same" : "different";
      } catch (err) {
        return /nested more than/.test((err as Error).message) ? "refused" : (err as Error).message;
      }
    };
    // Only the depth is reported on failure: printing the value itself would recurse as deep.
    const depths = fc.tuple(fc.integer({ min: 1, max: MAX_NESTING_DEPTH * 3 }), fc.boolean());
    for (const [depth, mixed] of fc.sample(depths, 60)) {
      const value = nested(depth, mixed);
      const text = JSON.stringify(value);
      const want = depth > MAX_NESTING_DEPTH ? "refused" : "same";
      const got = [plainValueProblem(value) === undefined ? "same" : "refused", outcome(parsePlainJson, text, value)];
      expect([depth, mixed, ...got]).toEqual([depth, mixed, want, want]);
    }
    // JSON is YAML (flow style), and a YAML parse recurses: at the bound it reads, one deeper it refuses.
    for (const depth of [MAX_NESTING_DEPTH, MAX_NESTING_DEPTH + 1]) {
      const value = nested(depth);
      expect([depth, outcome(parsePlainYaml, JSON.stringify(value), value)]).toEqual([depth, depth > MAX_NESTING_DEPTH ? "refused" : "same"]);
    }
  });

  it("bounds a YAML text's nesting from above before parsing it, in block and in flow style", () => {
    const depth = (v: unknown): number => (v !== null && typeof v === "object" ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0);
    const values = fc.tuple(fc.integer({ min: 1, max: 450 }), fc.boolean(), fc.jsonValue({ maxDepth: 3 }));
    for (const [levels, mixed, leaf] of fc.sample(values, 40)) {
      let value: unknown = leaf;
      for (let i = 0; i < levels; i++) value = mixed && i % 2 ? [value, "it's [ here"] : { a: value, b: "don't {" };
      for (const text of [toYaml(value), JSON.stringify(value)]) expect([levels, yamlNestingBound(text) >= depth(value)]).toEqual([levels, true]);
    }
    // Quotes opened inside plain scalars, closers inside quoted ones and block scalars do not hide brackets.
    const hidden = ["a: don't\nb: ", 'a: [[ "x\n]]]]]]" ', "a: |\n  ]]]]\nb: "].map((head) => `${head}${"[".repeat(600)}${"]".repeat(600)}`);
    for (const text of hidden) expect(() => parsePlainYaml(text)).toThrow(/nested more than/);
  });

  it("refuses 2,000 levels of YAML block style and 10,000 of JSON without running out of stack", () => {
    const block = Array.from({ length: 2_000 }, (_, i) => `${" ".repeat(i)}a:`).join("\n") + " x\n";
    expect(() => parsePlainYaml(block)).toThrow(/nested more than/);
    expect(() => parsePlainJson(`${"[".repeat(10_000)}${"]".repeat(10_000)}`)).toThrow(/nested more than/);
  });
});

describe("a ControllerRevision at the bound over HTTP", () => {
  it("is created, patched, replaced and listed as YAML; one level deeper is a 400 that stores nothing", async () => {
    const name = shared.unique("deep");
    const created = await call(shared.base, "POST", CR, { body: revision(name, MAX_NESTING_DEPTH) });
    expect(created.status).toBe(201);
    const patched = await call(shared.base, "PATCH", `${CR}/${name}`, { body: { metadata: { labels: { a: "b" } } }, contentType: "application/merge-patch+json" });
    expect(patched.status).toBe(200);
    const strategic = await call(shared.base, "PATCH", `${CR}/${name}`, { body: { metadata: { labels: { c: "d" } } }, contentType: "application/strategic-merge-patch+json" });
    expect(strategic.status).toBe(200);
    const replaced = await call(shared.base, "PUT", `${CR}/${name}`, { body: { ...strategic.body, metadata: { ...strategic.body.metadata, labels: { e: "f" } } } });
    expect(replaced.status).toBe(200);
    const yaml = await call(shared.base, "GET", CR, { accept: "application/yaml" });
    expect(yaml.status).toBe(200);
    expect(isDeepStrictEqual(fromYaml(yaml.text).items.find((i: any) => i.metadata.name === name).data, nested(MAX_NESTING_DEPTH - 1))).toBe(true);
    const before = await shared.server.storage.revision();
    const deeper = await call(shared.base, "POST", CR, { body: revision(shared.unique("deeper"), MAX_NESTING_DEPTH + 1) });
    expect([deeper.status, deeper.body.reason]).toEqual([400, "BadRequest"]);
    expect(deeper.body.message).toContain(`nested more than ${MAX_NESTING_DEPTH} levels deep`);
    expect(await shared.server.storage.revision()).toBe(before);
  });

  it.each([
    ["JSON", "application/json", (depth: number) => `{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"j"},"revision":1,"data":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`],
    ["YAML", "application/yaml", (depth: number) => `apiVersion: apps/v1\nkind: ControllerRevision\nmetadata: {name: y}\nrevision: 1\ndata: ${"[".repeat(depth)}${"]".repeat(depth)}\n`],
  ])("answers 400 (not 500) to a %s body nested 4,500 deep", async (_what, contentType, body) => {
    const r = await call(shared.base, "POST", CR, { body: body(4500), contentType });
    expect([r.status, r.body.reason]).toEqual([400, "BadRequest"]);
    expect(r.body.message).toContain("nested more than");
  });

  it("refuses a YAML body of a million open brackets with a 400 at once, and keeps serving (the parser would abort the process)", async () => {
    const started = Date.now();
    const r = await call(shared.base, "POST", CR, { body: `data: ${"[".repeat(1_000_000)}`, contentType: "application/yaml" });
    expect([r.status, r.body.message]).toEqual([400, expect.stringContaining("nested more than")]);
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await call(shared.base, "GET", CR)).status).toBe(200);
  });

  it("refuses a JSON patch whose copies nest the object past the bound, with a 400 and no change", async () => {
    const name = shared.unique("copies");
    const created = (await call(shared.base, "POST", CR, { body: revision(name, 300) })).body;
    const deepest = `/data${"/a".repeat(298)}`;
    for (const ops of [1, 12]) {
      const patch = Array.from({ length: ops }, () => ({ op: "copy", from: "/data", path: `${deepest}/b` }));
      const r = await call(shared.base, "PATCH", `${CR}/${name}`, { body: patch, contentType: "application/json-patch+json" });
      expect([ops, r.status, r.body.reason]).toEqual([ops, 400, "BadRequest"]);
      expect(r.body.message).toContain("nested more than");
    }
    expect((await call(shared.base, "GET", `${CR}/${name}`)).body.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  });
});

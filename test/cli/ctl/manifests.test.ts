// Reading -f: files, directories with and without -R, YAML streams, JSON, Lists, stdin, and clear refusals.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { parseManifestText, readManifests } from "../../../src/cli/ctl/manifests.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const sa = (name: string) => `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n`;

describe("readManifests", () => {
  const dir = tempDir("ctl-manifests-");
  writeFileSync(join(dir, "a.yaml"), `${sa("a")}---\n${sa("b")}---\n`);
  writeFileSync(join(dir, "c.json"), JSON.stringify({ apiVersion: "v1", kind: "List", items: [{ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "c" } }] }));
  writeFileSync(join(dir, "notes.txt"), "not a manifest");
  mkdirSync(join(dir, "sub"));
  writeFileSync(join(dir, "sub", "d.yml"), sa("d"));

  const names = async (files: string[], recursive = false, stdin?: string) =>
    (await readManifests(files, { recursive, ...(stdin !== undefined && { stdin: Readable.from([stdin]) }) })).map((m) => m.object.metadata.name);

  it.each([
    ["a file with two documents", [join(dir, "a.yaml")], false, ["a", "b"]],
    ["a JSON List", [join(dir, "c.json")], false, ["c"]],
    ["a directory, manifests only, not descending", [dir], false, ["a", "b", "c"]],
    ["a directory with -R", [dir], true, ["a", "b", "c", "d"]],
    ["several -f in order", [join(dir, "sub", "d.yml"), join(dir, "a.yaml")], false, ["d", "a", "b"]],
  ])("reads %s", async (_what, files, recursive, expected) => {
    expect(await names(files, recursive)).toEqual(expected);
  });

  it("reads stdin for -", async () => {
    expect(await names(["-"], false, sa("from-stdin"))).toEqual(["from-stdin"]);
  });

  it("names the path that does not exist", async () => {
    await expect(readManifests([join(dir, "nope.yaml")])).rejects.toThrow(`the path "${join(dir, "nope.yaml")}" does not exist`);
  });
});

describe("parseManifestText", () => {
  it.each([
    ["malformed YAML", "a: [", /error parsing f.yaml/],
    ["an alias without its anchor", "apiVersion: v1\nkind: ServiceAccount\nmetadata: *m\n", /error parsing f.yaml: Unresolved alias/],
    ["a List that holds itself", "&l {apiVersion: v1, kind: List, items: [*l]}", /error parsing f.yaml: .*cycle/],
    ["a bad second document", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n---\n*x\n", /error parsing f.yaml \(document 2\)/],
    ["a scalar", "42", /expected an object, got number/],
    ["a missing kind", "apiVersion: v1\nmetadata: {name: a}", /kind not set/],
    ["a missing apiVersion and kind", "metadata: {name: a}", /apiVersion not set, kind not set/],
    ["a missing name", "apiVersion: v1\nkind: ServiceAccount", /metadata.name not set/],
  ])("refuses %s", (_what, text, message) => {
    expect(() => parseManifestText(text, "f.yaml")).toThrow(message);
  });

  it("reads YAML merge keys, as kubectl does", () => {
    const [m] = parseManifestText("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: merged\n  labels: &l {team: a}\n  annotations:\n    <<: *l\n    note: x\n", "f.yaml");
    expect(m!.object.metadata).toEqual({ name: "merged", labels: { team: "a" }, annotations: { team: "a", note: "x" } });
  });

  it("skips empty documents and accepts generateName", () => {
    const out = parseManifestText(`---\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  generateName: x-\n`, "f.yaml");
    expect(out.map((m) => m.object.metadata.generateName)).toEqual(["x-"]);
  });
});

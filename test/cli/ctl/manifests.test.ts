// Reading -f: files, directories with and without -R, YAML streams, JSON, Lists, stdin, and clear refusals.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { parseManifestText, readManifests } from "../../../src/cli/ctl/manifests.js";

const sa = (name: string) => `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n`;

describe("readManifests", () => {
  const dir = mkdtempSync(join(tmpdir(), "ctl-manifests-"));
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
    ["a scalar", "42", /expected an object, got number/],
    ["a missing kind", "apiVersion: v1\nmetadata: {name: a}", /kind not set/],
    ["a missing apiVersion and kind", "metadata: {name: a}", /apiVersion not set, kind not set/],
    ["a missing name", "apiVersion: v1\nkind: ServiceAccount", /metadata.name not set/],
  ])("refuses %s", (_what, text, message) => {
    expect(() => parseManifestText(text, "f.yaml")).toThrow(message);
  });

  it("skips empty documents and accepts generateName", () => {
    const out = parseManifestText(`---\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  generateName: x-\n`, "f.yaml");
    expect(out.map((m) => m.object.metadata.generateName)).toEqual(["x-"]);
  });
});

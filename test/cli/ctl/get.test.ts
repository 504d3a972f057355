// `platformctl get` output beside kubectl's for the same command against the same `platform-ca up`: the empty-list note
// (table output only), -o custom-columns / custom-columns-file, and --sort-by.
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { oneClearError, sameAsKubectl, useUpServer } from "./fixtures.js";
import { tempDir, tempFile } from "../../fixtures/temp-dir.js";
import { serviceAccount } from "../../fixtures/objects.js";

const server = useUpServer();

beforeAll(async () => {
  // The server lists them svc-10, svc-2, svc-9; `rank` is missing on one; `size` orders differently as quantities and as text.
  const sa = (name: string, labels: Record<string, string>) => toYaml(serviceAccount({ name, labels }));
  const created = await server.up.ctl(["create", "-f", "-"], {
    stdin: [sa("svc-10", { rank: "b", size: "10" }), sa("svc-9", { size: "9" }), sa("svc-2", { rank: "a", size: "100m" })].join("---\n"),
  });
  expect(created.code).toBe(0);
  const dir = tempDir();
  for (const name of ["zoe", "adam"]) expect((await server.up.ctl(["certificate", "request", name, "--cn", name, "--key-out", join(dir, name)])).code).toBe(0);
  expect((await server.up.ctl(["certificate", "approve", "zoe"])).code).toBe(0);
}, 60_000);

describe("an empty list", () => {
  it.each([["json"], ["yaml"], ["name"], ["jsonpath={.items}"], ["go-template={{len .items}}"]])("prints no note on stderr with -o %s", async (format) => {
    const r = await server.up.ctl(["get", "roles", "-o", format]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    await sameAsKubectl(server.up, ["get", "roles", "-o", format]);
  });

  it.each([[[]], [["-o", "wide"]]])("says so on stderr with the table output %j", async (more) => {
    const r = await server.up.ctl(["get", "roles", ...more]);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "", "No resources found in default namespace.\n"]);
  });
});

describe("-o custom-columns", () => {
  it.each([
    [["get", "sa", "-o", "custom-columns=NAME:.metadata.name,rank:{.metadata.labels.rank},LABELS:metadata.labels"]],
    [["get", "csr", "-o", "custom-columns=N:.metadata.name,USAGES:.spec.usages,C:.status.conditions[*].type,S:{.spec.signerName}", "--no-headers"]],
    [["get", "csr", "zoe", "nosuch", "adam", "-o", "custom-columns=N:.metadata.name"]],
    [["get", "csr", "nosuch", "-o", "custom-columns=N:.metadata.name"]],
    [["get", "roles", "-o", "custom-columns=NAME:.metadata.name"]],
  ])("%j prints what kubectl prints", async (args) => {
    await sameAsKubectl(server.up, args);
  });

  it("reads the columns from custom-columns-file", async () => {
    const file = tempFile("columns.txt", "NAME          RANK\n.metadata.name {.metadata.labels.rank}\n");
    const out = await sameAsKubectl(server.up, ["get", "sa", "-o", `custom-columns-file=${file}`, "--sort-by=.metadata.name"]);
    expect(out).toMatch(/^NAME\s+RANK\n(.*\n)*svc-10\s+b\nsvc-2\s+a\nsvc-9\s+<none>\n/);
  });

  it.each([
    ["custom-columns=NAME", /expected `--output` custom-columns entries to be <header>:<json-path-expr>, got "NAME"/],
    ["custom-columns=", /no custom columns given/],
  ])("refuses -o %s as a usage error", async (format, message) => {
    const r = await server.up.ctl(["get", "sa", "-o", format]);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(message);
  });
});

describe("--sort-by", () => {
  it.each([
    [["get", "sa", "--sort-by=.metadata.name", "-o", "name"]],
    [["get", "sa", "--sort-by", "{.metadata.labels.rank}", "-o", "name"]],
    [["get", "sa", "--sort-by", "metadata.labels.size", "-o", "custom-columns=NAME:.metadata.name,SIZE:.metadata.labels.size"]],
    [["get", "sa", "--sort-by=metadata.name", "-o", "custom-columns=NAME:.metadata.name"]],
    [["get", "sa", "--sort-by=.metadata.name", "-o", "jsonpath={.items[*].metadata.name}"]],
    [["get", "csr", "--sort-by=.metadata.name", "-o", "custom-columns=N:.metadata.name,C:.status.conditions[0].type"]],
    [["get", "csr", "--sort-by=.metadata.name", "--no-headers", "-o", "custom-columns=N:.metadata.name"]],
  ])("%j orders as kubectl does", async (args) => {
    await sameAsKubectl(server.up, args);
  });

  it.each([
    [".metadata.labels.rank", ["svc-9", "svc-2", "svc-10"]],
    ["{.metadata.labels.size}", ["svc-2", "svc-9", "svc-10"]],
  ])("sorts the server's table by %s of the objects (missing first, quantities by value)", async (path, order) => {
    // Not compared with kubectl: the AGE column may differ by a second.
    const r = await server.up.ctl(["get", "sa", "-l", "size", `--sort-by=${path}`]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toMatch(/^NAME\s+SECRETS\s+AGE\n/);
    expect(r.stdout.trim().split("\n").slice(1).map((l) => l.split(/\s+/)[0])).toEqual(order);
  });

  it("fails when no object has the field", async () => {
    const r = await server.up.ctl(["get", "sa", "--sort-by=.spec.nothing", "-o", "name"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe('error: couldn\'t find any field with path "{.spec.nothing}" in the list of objects');
  });
});

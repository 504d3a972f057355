// -o parsing and the structured printers: JSON, YAML and name byte-identical to kubectl's; managedFields; template files.
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../../src/api/meta.js";
import { asList, parseOutput, printObject, qualifiedName } from "../../../../src/cli/ctl/output/printer.js";
import { isPlatformError } from "../../../../src/errors.js";
import { tempDir } from "../../../fixtures/temp-dir.js";

const FIXTURE = new URL("../template-fixture.json", import.meta.url).pathname;
const fixture = JSON.parse(readFileSync(FIXTURE, "utf8")) as ApiObject;
const PRINT = { allowMissingKeys: true, showManagedFields: false };
const run = promisify(execFile);

const withManaged = (o: ApiObject): ApiObject => ({ ...o, metadata: { ...o.metadata, managedFields: [{ manager: "platformctl-patch", operation: "Update" }] } });

async function kubectlPrints(format: string, file = FIXTURE): Promise<string> {
  const { stdout } = await run("kubectl", ["--kubeconfig", "/dev/null", "patch", "--local", "-f", file, "--type", "merge", "-p", "{}", "-o", format], { timeout: 20_000 });
  return stdout;
}

function optionError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (isPlatformError(err)) return `${err.code}: ${err.message}`;
    throw err;
  }
  throw new Error("no error");
}

describe("structured printers", () => {
  it.each(["json", "yaml", "name"])("prints -o %s byte for byte as kubectl does", async (format) => {
    expect(printObject(parseOutput(format), fixture, PRINT)).toBe(await kubectlPrints(format));
  });

  it("prints YAML strings that YAML 1.1 would read as something else quoted, as kubectl does", async () => {
    const dir = tempDir("ctl-printer-");
    const obj = { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "q", annotations: { y: "n", on: "yes", t: "2023-01-01T00:00:00Z", num: "0123", empty: "", multi: "a\nb\n" } } };
    writeFileSync(join(dir, "q.json"), JSON.stringify(obj));
    expect(printObject({ format: "yaml" }, obj as ApiObject, PRINT)).toBe(await kubectlPrints("yaml", join(dir, "q.json")));
  });

  it.each([
    ["json", false, false],
    ["yaml", false, false],
    ["json", true, true],
    ["yaml", true, true],
  ] as const)("prints -o %s with managedFields only when asked (show=%s)", (format, show, expected) => {
    const text = printObject(parseOutput(format), withManaged(fixture), { ...PRINT, showManagedFields: show });
    expect(text.includes("managedFields")).toBe(expected);
  });

  it("strips managedFields from every item of a list", () => {
    const text = printObject({ format: "json" }, asList([withManaged(fixture), withManaged(fixture)]), PRINT);
    expect(JSON.parse(text)).toMatchObject({ kind: "List", apiVersion: "v1", metadata: { resourceVersion: "" } });
    expect(text).not.toContain("managedFields");
  });

  it.each([
    [{ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "a" } }, "serviceaccount/a"],
    [{ apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", metadata: { name: "b" } }, "certificatesigningrequest.certificates.platform.io/b"],
    [{ apiVersion: "apps/v1", kind: "ControllerRevision", metadata: { name: "c" } }, "controllerrevision.apps/c"],
  ])("names %j as %s", (obj, name) => {
    expect(qualifiedName(obj as ApiObject)).toBe(name);
  });

  it("prints one name per item of a list", () => {
    const list = asList([fixture, { ...fixture, metadata: { name: "other" } }]);
    expect(printObject({ format: "name" }, list, PRINT)).toBe("serviceaccount/fixture\nserviceaccount/other\n");
  });
});

describe("-o parsing", () => {
  const dir = tempDir("ctl-output-");
  writeFileSync(join(dir, "t.jsonpath"), "{.metadata.name}");
  writeFileSync(join(dir, "t.tmpl"), "{{.kind}}");

  it.each([
    ["jsonpath={.metadata.name}", undefined, "fixture"],
    ["jsonpath", "{.metadata.namespace}", "default"],
    [`jsonpath-file=${join(dir, "t.jsonpath")}`, undefined, "fixture"],
    ["go-template={{.metadata.name}}", undefined, "fixture"],
    ["go-template", "{{.kind}}", "ServiceAccount"],
    ["template={{.metadata.name}}", undefined, "fixture"],
    [`go-template-file=${join(dir, "t.tmpl")}`, undefined, "ServiceAccount"],
    [`templatefile=${join(dir, "t.tmpl")}`, undefined, "ServiceAccount"],
    [undefined, "{{.metadata.name}}", "fixture"],
  ])("renders -o %s with --template %s", (output, template, expected) => {
    expect(printObject(parseOutput(output, template), fixture, PRINT)).toBe(expected);
  });

  it.each([
    ["xml", /INVALID_OPTION: expected `--output` to be one of go-template,go-template-file,json,jsonpath,.*yaml, got "xml"/],
    ["wide", /INVALID_OPTION: .*got "wide"/],
    ["jsonpath", /INVALID_OPTION: expected `--output` jsonpath=TEMPLATE/],
    ["go-template=", /INVALID_OPTION/],
    ["jsonpath-file=/nonexistent/t", /IO_ERROR: error reading template file \/nonexistent\/t: ENOENT/],
    ["jsonpath={.a", /INVALID_OPTION: error parsing jsonpath/],
  ])("refuses -o %s", (output, message) => {
    expect(optionError(() => parseOutput(output))).toMatch(message);
  });

  it("accepts wide only where a command allows it", () => {
    expect(parseOutput("wide", undefined, ["wide"])).toEqual({ format: "wide" });
  });
});

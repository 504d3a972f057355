// The jsonpath and go-template engines against kubectl itself: the same template on the same object prints the same bytes.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../../../src/errors.js";
import { GoTemplate } from "../../../../src/cli/ctl/output/go-template.js";
import { JsonPath } from "../../../../src/cli/ctl/output/jsonpath.js";

const FIXTURE = new URL("../template-fixture.json", import.meta.url).pathname;
const object: unknown = JSON.parse(readFileSync(FIXTURE, "utf8"));
const run = promisify(execFile);

/** kubectl renders `-o <format>=<template>` of the fixture offline (patch --local with an empty patch). */
async function kubectl(format: string, template: string, allowMissing = true): Promise<{ ok: boolean; out: string }> {
  const args = ["--kubeconfig", "/dev/null", "patch", "--local", "-f", FIXTURE, "--type", "merge", "-p", "{}", "-o", `${format}=${template}`];
  if (!allowMissing) args.push("--allow-missing-template-keys=false");
  try {
    const { stdout } = await run("kubectl", args, { timeout: 20_000 });
    return { ok: true, out: stdout };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: string }).stderr) };
  }
}

const JSONPATHS = [
  "{.metadata.name}",
  "{.spec.items[*].name}",
  "{.spec.items[0].port}",
  "{.spec.items[-1:].name}",
  "{.spec.items[1:3].name}",
  "{.spec.items[0,2].name}",
  "{.spec.items[::2].name}",
  "{.spec.items[?(@.port>100)].name}",
  '{.status.conditions[?(@.type=="Ready")].status}',
  '{.status.conditions[?(@.status!="True")].type}',
  "{.spec.items[?(@.tags)].name}",
  '{range .spec.items[*]}{.name}:{.port}{"\\n"}{end}',
  "{.metadata.labels}",
  "{.spec.items[0]}",
  "{.spec.items[*]['name','port']}",
  "{$.metadata.name}",
  "{.spec.enabled} {.spec.ratio} {.spec.replicas} {.spec.empty}",
  "{.spec.items[*].tags}",
  "{.metadata.annotations.note}",
  "{.nope}",
  "before {.metadata.name} after",
];

const GO_TEMPLATES = [
  "{{.metadata.name}}",
  "{{range .spec.items}}{{.name}}={{.port}};{{end}}",
  "{{range $i, $e := .spec.items}}{{$i}}:{{$e.name}} {{end}}",
  "{{range $e := .spec.items}}{{$e.port}},{{end}}",
  "{{if .spec.enabled}}yes{{else}}no{{end}}",
  "{{if .spec.empty}}non-empty{{else if .spec.items}}items{{else}}none{{end}}",
  '{{index .metadata.labels "app"}}',
  "{{index .spec.items 1 | printf \"%v\"}}",
  "{{.spec.data | base64decode}}",
  '{{printf "%s-%d-%.2f-%q-%t-%5s|%-5s|%05d|%x|%%" .metadata.name .spec.replicas .spec.ratio .metadata.name .spec.enabled "ab" "cd" 42 255}}',
  "{{len .spec.items}} {{len .metadata.labels}} {{len .metadata.name}}",
  "{{.metadata.labels}}",
  "{{.spec}}",
  "{{.nope}} {{.nope.deeper}} {{.spec.nothing}}",
  "{{range .metadata.labels}}{{.}},{{end}}",
  "{{range $k, $v := .metadata.labels}}{{$k}}={{$v}} {{end}}",
  "a  {{- .metadata.name -}}  b",
  "{{$n := .metadata.name}}{{$n}}-{{$n}}",
  "{{with .metadata.labels}}{{.app}}{{end}}{{with .nope}}x{{else}}none{{end}}",
  '{{eq .spec.replicas 3}} {{ne .metadata.name "x"}} {{lt 1 2}} {{ge .spec.replicas 4}} {{and 1 0}} {{or 0 "x"}} {{not true}}',
  '{{exists . "spec" "items"}} {{exists . "spec" "missing"}}',
  "{{/* a comment */}}ok",
  '{{print "a" 1 2 "b"}} {{println "x" 3}}',
  "{{range .spec.empty}}x{{else}}empty{{end}}",
  "{{(index .spec.items 0).name}}",
  '{{range .status.conditions}}{{if eq .type "Ready"}}{{.status}}{{end}}{{end}}',
  "{{.spec.ratio}} {{.spec.big}} {{.spec.enabled}}",
];

describe("jsonpath output agrees with kubectl", () => {
  it.each(JSONPATHS)("renders %s as kubectl does", async (template) => {
    const expected = await kubectl("jsonpath", template);
    expect(expected.ok).toBe(true);
    expect(new JsonPath(template).execute(object)).toBe(expected.out);
  });

  it.each(["{.spec.items[*].name}", "{.metadata}", '{range .spec.items[*]}{.port}{"-"}{end}'])("renders %s as JSON as kubectl's jsonpath-as-json does", async (template) => {
    const expected = await kubectl("jsonpath-as-json", template);
    expect(new JsonPath(template).execute(object, { asJson: true })).toBe(expected.out);
  });

  it.each(["{.nope}", "{.spec.items[7].name}", "{.metadata.labels.nope}"])("refuses %s with missing keys disallowed, as kubectl does", async (template) => {
    expect((await kubectl("jsonpath", template, false)).ok).toBe(false);
    expect(() => new JsonPath(template).execute(object, { allowMissingKeys: false })).toThrow(/not found|out of bounds/);
  });
});

describe("go-template output agrees with kubectl", () => {
  it.each(GO_TEMPLATES)("renders %s as kubectl does", async (template) => {
    const expected = await kubectl("go-template", template);
    expect(expected.ok).toBe(true);
    expect(new GoTemplate(template).execute(object)).toBe(expected.out);
  });

  it("prints <no value> for a missing key of index even with missing keys disallowed, as kubectl does", async () => {
    const template = '{{index .metadata.labels "nope"}}';
    const expected = await kubectl("go-template", template, false);
    expect(expected).toEqual({ ok: true, out: "<no value>" });
    expect(new GoTemplate(template).execute(object, { allowMissingKeys: false })).toBe(expected.out);
  });

  it.each(["{{.nope}}", "{{.metadata.nope}}", "{{.nope.deeper}}"])("refuses %s with missing keys disallowed, as kubectl does", async (template) => {
    expect((await kubectl("go-template", template, false)).ok).toBe(false);
    expect(() => new GoTemplate(template).execute(object, { allowMissingKeys: false })).toThrow(/no entry for key/);
  });
});

describe("map order", () => {
  // kubectl walks maps in Go's random order for these; this engine uses key order, so the output is stable.
  it.each([
    ["{.metadata.labels.*}", "web front"],
    ["{..name}", "fixture a b c"],
    ["{.status..type}", "Ready Failed"],
  ])("renders %s in key order", (template, expected) => {
    expect(new JsonPath(template).execute(object)).toBe(expected);
  });

  it("refuses [*] on a map, as kubectl does", async () => {
    expect((await kubectl("jsonpath", "{.metadata.labels[*]}")).ok).toBe(false);
    expect(() => new JsonPath("{.metadata.labels[*]}").execute(object)).toThrow("map[string]interface {} is not array or slice");
  });
});

describe("template mistakes", () => {
  it.each([
    ["an unclosed action", "{.metadata.name", () => new JsonPath("{.metadata.name")],
    ["a range without end", "{range .items[*]}{.x}", () => new JsonPath("{range .items[*]}{.x}")],
    ["an end without range", "{.a}{end}", () => new JsonPath("{.a}{end}")],
    ["a bad index", "{.items[x]}", () => new JsonPath("{.items[x]}")],
    ["an unclosed go action", "{{.metadata.name", () => new GoTemplate("{{.metadata.name")],
    ["an if without end", "{{if .a}}x", () => new GoTemplate("{{if .a}}x")],
    ["a stray end", "{{end}}", () => new GoTemplate("{{end}}")],
    ["a stray else", "{{else}}", () => new GoTemplate("{{else}}")],
    ["an unsupported define", '{{define "x"}}{{end}}', () => new GoTemplate('{{define "x"}}{{end}}')],
  ])("reports %s (%s) as a typed option error", (_what, _template, make) => {
    let caught: unknown;
    try {
      make();
    } catch (err) {
      caught = err;
    }
    expect(isPlatformError(caught, "INVALID_OPTION")).toBe(true);
  });

  it.each([
    ["an unknown function", "{{nosuch .a}}", /function "nosuch" not defined/],
    ["an argument to a field", "{{.metadata 1}}", /can't give argument to non-function/],
    ["a field of a string", "{{.metadata.name.first}}", /can't evaluate field first/],
    ["an index out of range", "{{index .spec.items 9}}", /index out of range: 9/],
    ["bad base64", "{{.metadata.name | base64decode}}", /base64decode/],
    ["an undefined variable", "{{$nope}}", /undefined variable/],
  ])("fails at run time on %s", (_what, template, message) => {
    expect(() => new GoTemplate(template).execute(object)).toThrow(message);
  });
});

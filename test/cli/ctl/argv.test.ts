// kubectl-style arguments rewritten for commander: bare --dry-run/--validate/--version, --bool=false, the command position.
import { describe, expect, it } from "vitest";
import { firstOperand, flagTable, normalizeArgv } from "../../../src/cli/ctl/argv.js";
import { buildCtlProgram } from "../../../src/cli/ctl/root.js";
import { allCtlVerbs } from "../../../src/cli/ctl/verbs.js";

const flags = flagTable(buildCtlProgram(await allCtlVerbs(), () => undefined));

describe("normalizeArgv", () => {
  it.each([
    [["patch", "sa", "x", "--dry-run"], ["patch", "sa", "x", "--dry-run=unchanged"]],
    [["patch", "--dry-run", "server"], ["patch", "--dry-run=unchanged", "server"]],
    [["patch", "--dry-run=server"], ["patch", "--dry-run=server"]],
    [["create", "--validate"], ["create", "--validate=strict"]],
    [["--version"], ["--version=true"]],
    [["get", "--allow-missing-template-keys=false"], ["get", "--no-allow-missing-template-keys"]],
    [["get", "--allow-missing-template-keys=true"], ["get", "--allow-missing-template-keys"]],
    [["patch", "--local=true"], ["patch", "--local"]],
    [["patch", "--local=false"], ["patch"]],
    [["get", "--watch=TRUE"], ["get", "--watch"]],
    [["get", "--namespace=false"], ["get", "--namespace=false"]],
    [["patch", "--", "--dry-run", "--local=true"], ["patch", "--", "--dry-run", "--local=true"]],
  ])("rewrites %j as %j", (input, output) => {
    expect(normalizeArgv(input, flags)).toEqual(output);
  });
});

describe("firstOperand", () => {
  it.each([
    [["get", "csr"], 0],
    [["-n", "kube", "get", "csr"], 2],
    [["--namespace=kube", "get"], 1],
    [["-s", "https://x", "--insecure-skip-tls-verify", "describe"], 3],
    [["--warnings-as-errors"], -1],
    [["--", "get"], -1],
  ])("finds the command in %j at %i", (args, at) => {
    expect(firstOperand(args, flags)).toBe(at);
  });
});

// Inherited options anywhere on the line: the innermost value wins, defaults apply once, --version and --profile checks.
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { flagTable, normalizeArgv } from "../../../src/cli/ctl/argv.js";
import { globalFlags, type GlobalFlags } from "../../../src/cli/ctl/global-options.js";
import { parseProfileKind } from "../../../src/cli/ctl/profile.js";
import { buildCtlProgram } from "../../../src/cli/ctl/root.js";
import { isPlatformError } from "../../../src/errors.js";

/** Parses `args` with a probe command (and a nested one) that records the merged inherited options. */
async function flagsOf(args: string[], env: Record<string, string> = { HOME: "/home/u" }): Promise<GlobalFlags> {
  let seen: GlobalFlags | undefined;
  const probe = (program: Command) => {
    const record = (_o: unknown, cmd: Command) => void (seen = globalFlags(cmd, env));
    program.command("probe").action(record);
    program.command("outer").command("inner").action(record);
  };
  const program = buildCtlProgram([probe], () => undefined);
  await program.parseAsync(["node", "platformctl", ...normalizeArgv(args, flagTable(program))]);
  return seen!;
}

describe("globalFlags", () => {
  it.each([
    [["probe"], { requestTimeout: "0", cacheDir: "/home/u/.platform/cache", profile: "none", profileOutput: "profile.pprof", groupSuffix: "platform.io" }],
    [["-n", "a", "probe"], { namespace: "a" }],
    [["probe", "-n", "b"], { namespace: "b" }],
    [["-n", "a", "probe", "-n", "b"], { namespace: "b" }],
    [["--request-timeout", "5s", "probe"], { requestTimeout: "5s" }],
    [["outer", "--token", "t", "inner", "--context", "c"], { token: "t", context: "c" }],
    [["probe", "--warnings-as-errors", "--as", "bob", "--as-group", "g1", "--as-group", "g2"], { warningsAsErrors: true, as: "bob", asGroup: ["g1", "g2"] }],
    [["probe", "--version=v1.2.3"], { version: "v1.2.3" }],
    [["probe", "--cache-dir", "/c", "--group-suffix", "k8s.io"], { cacheDir: "/c", groupSuffix: "k8s.io" }],
  ])("reads %j as %j", async (args, expected) => {
    expect(await flagsOf(args)).toMatchObject(expected);
  });

  it("refuses a malformed --version", async () => {
    await expect(flagsOf(["probe", "--version=later"])).rejects.toThrow("expected `--version` to be true, raw or a version like v1.2.3");
  });
});

describe("parseProfileKind", () => {
  it.each([[undefined, "none"], ["none", "none"], ["cpu", "cpu"], ["heap", "heap"]])("accepts %s", (value, kind) => {
    expect(parseProfileKind(value)).toBe(kind);
  });

  it.each([
    ["goroutine", /the goroutine profile belongs to Go programs/],
    ["threadcreate", /Go programs/],
    ["block", /Go programs/],
    ["mutex", /Go programs/],
    ["memory", /to be one of none, cpu, heap/],
  ])("refuses %s as an option error", (value, message) => {
    let caught: unknown;
    try {
      parseProfileKind(value);
    } catch (err) {
      caught = err;
    }
    expect(isPlatformError(caught, "INVALID_OPTION")).toBe(true);
    expect((caught as Error).message).toMatch(message);
  });
});

// The preferences file: where it is read from, what it may say, and how defaults and aliases rewrite the arguments.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { flagTable } from "../../../src/cli/ctl/argv.js";
import { applyPreferences, loadPreferences, parsePreferences, preferencesPath } from "../../../src/cli/ctl/preferences.js";
import { buildCtlProgram } from "../../../src/cli/ctl/root.js";
import { allCtlVerbs } from "../../../src/cli/ctl/verbs.js";
import { isPlatformError } from "../../../src/errors.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const program = buildCtlProgram(await allCtlVerbs(), () => undefined);
const flags = flagTable(program);

const PREFS = parsePreferences(
  `kind: Preference
defaults:
- command: get
  options:
  - name: output
    default: wide
  - name: show-labels
    default: true
- command: certificate approve
  options:
  - name: force
    default: "true"
aliases:
- name: csrs
  command: get
  prependArgs: [certificatesigningrequests]
  appendArgs: [--sort]
  options:
  - name: output
    default: name
`,
  "test",
);

describe("applyPreferences", () => {
  it.each([
    [["get", "sa"], ["get", "--output=wide", "--show-labels=true", "sa"]],
    [["get", "sa", "-o", "json"], ["get", "--show-labels=true", "sa", "-o", "json"]],
    [["get", "sa", "-ojson", "--show-labels=false"], ["get", "sa", "-ojson", "--show-labels=false"]],
    [["-n", "x", "get", "sa"], ["-n", "x", "get", "--output=wide", "--show-labels=true", "sa"]],
    [["certificate", "approve", "a"], ["certificate", "approve", "--force=true", "a"]],
    [["certificate", "deny", "a"], ["certificate", "deny", "a"]],
    [["patch", "sa", "a"], ["patch", "sa", "a"]],
    [["csrs", "-l", "a=b"], ["get", "--output=name", "--show-labels=true", "certificatesigningrequests", "-l", "a=b", "--sort"]],
    [["csrs", "--", "x"], ["get", "--output=name", "--show-labels=true", "certificatesigningrequests", "--sort", "--", "x"]],
  ])("turns %j into %j", (args, expected) => {
    expect(applyPreferences(args, PREFS, program, flags)).toEqual(expected);
  });

  it("leaves the arguments alone without preferences", () => {
    expect(applyPreferences(["get", "sa"], undefined, program, flags)).toEqual(["get", "sa"]);
  });
});

describe("preferences file", () => {
  const home = tempDir("ctl-prefs-");

  it.each([
    [undefined, {}, { path: join(home, ".platform", "platformrc"), explicit: false }],
    ["/etc/rc", {}, { path: "/etc/rc", explicit: true }],
    [undefined, { PLATFORMRC: "/x/rc" }, { path: "/x/rc", explicit: true }],
    ["/etc/rc", { PLATFORMRC: "off" }, undefined],
    ["off", {}, undefined],
  ])("with --platformrc %s and %j reads %j", (flag, env, expected) => {
    expect(preferencesPath(flag, { HOME: home, ...env })).toEqual(expected);
  });

  it("is no preferences when the default file is missing, and an error when a named one is", () => {
    expect(loadPreferences({ path: join(home, "missing"), explicit: false })).toBeUndefined();
    expect(() => loadPreferences({ path: join(home, "missing"), explicit: true })).toThrow(/preferences .*missing: cannot be read: ENOENT/);
  });

  it.each([
    ["not YAML", "a: [", /not valid YAML/],
    ["another kind", "kind: Config", /expected a document with kind: Preference/],
    ["a default without command", "kind: Preference\ndefaults:\n- options: []", /: expected `defaults\[0\]\.command` a command such as get, got nothing$/],
    ["an option without default", "kind: Preference\ndefaults:\n- command: get\n  options:\n  - name: output", /: expected `defaults\[0\]\.options\[0\]` a name and a default/],
    ["an alias without command", "kind: Preference\naliases:\n- name: x", /: expected `aliases\[0\]` a name and a command/],
    ["prependArgs that are not strings", "kind: Preference\naliases:\n- name: x\n  command: get\n  prependArgs: [1]", /: expected `aliases\[0\]\.prependArgs\[0\]` a string, got 1$/],
    ["a list written without a value", "kind: Preference\ndefaults:", /: expected `defaults` a list, got null$/],
  ])("refuses %s", (_what, text, message) => {
    const file = join(home, `bad-${Math.random()}`);
    writeFileSync(file, text);
    let caught: unknown;
    try {
      loadPreferences({ path: file, explicit: true });
    } catch (err) {
      caught = err;
    }
    expect(isPlatformError(caught, "CONFIG_INVALID")).toBe(true);
    expect((caught as Error).message).toMatch(message);
  });
});

// Every help screen of platform-ca and platformctl ends with examples of that command; ignored flags stay out of help.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { CTL, PLATFORM_CA, runNode } from "./ctl/fixtures.js";

/** The subcommands a help screen lists under "Commands:" (commander's implicit `help` left out). */
function listed(help: string): string[] {
  const section = (help.split(/^Commands:\n/m)[1] ?? "").split("\n\n")[0]!;
  return [...section.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]!).filter((name) => name !== "help");
}

/** Every command path of a CLI, found by walking its help screens (the real process each time). */
async function helpScreens(script: string): Promise<Map<string, string>> {
  const screens = new Map<string, string>();
  const walk = async (path: string[]) => {
    const r = await runNode(script, [...path, "--help"]);
    expect(r.code, path.join(" ")).toBe(0);
    screens.set(path.join(" "), r.stdout);
    for (const sub of listed(r.stdout)) await walk([...path, sub]);
  };
  await walk([]);
  return screens;
}

describe.each([
  ["platform-ca", PLATFORM_CA, 9],
  ["platformctl", CTL, 16],
])("%s help", (cli, script, least) => {
  it("shows, for every command, examples that run that command", async () => {
    const screens = await helpScreens(script);
    expect(screens.size).toBeGreaterThanOrEqual(least);
    for (const [path, help] of screens) {
      const examples = help.split(/^Examples:\n/m)[1];
      expect(examples, `${cli} ${path}`).toBeDefined();
      const lines = examples!.split("\n").filter((l) => l.startsWith("  "));
      expect(lines.some((l) => l.includes(path ? `${cli} ${path}` : `${cli} `)), `${cli} ${path}`).toBe(true);
    }
  }, 120_000);
});

describe("platformctl help", () => {
  it("leaves out the ignored --storage-driver-* flags and --kubeconfig, which are still accepted", async () => {
    for (const args of [["--help"], ["get", "--help"]]) expect((await runNode(CTL, args)).stdout).not.toMatch(/storage-driver|kubeconfig/);
    const r = await runNode(CTL, ["version", "--client", "--storage-driver-db", "x", "--storage-driver-secure"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Client Version: v/);
  });

  it("shows the --allow-missing-template-keys default once", async () => {
    const help = (await runNode(CTL, ["get", "--help"])).stdout.replace(/\s+/g, " ");
    expect(help.match(/default:? true/g)).toHaveLength(1);
    expect(help).toContain("--allow-missing-template-keys ignore missing fields or map keys in templates (default: true)");
  });
});

describe("output into a pipe closed early (`… --help | head -1`)", () => {
  it.each([
    ["platform-ca", PLATFORM_CA],
    ["platformctl", CTL],
  ])("%s ends quietly, without an EPIPE stack trace", async (_name, script) => {
    const child = spawn(process.execPath, [script, "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    // Close our end before the help is written: every write of it meets a closed pipe, as behind `head -1`.
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|Unhandled|at /);
    expect(code).toBe(0);
  });
});

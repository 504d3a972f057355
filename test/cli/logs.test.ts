// `--log-format`, `--log-level` and `-v` on real `platform-ca up` processes: JSON off a terminal, text on request, the banner last.
import { execFileSync, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { levelOfVerbosity } from "../../src/cli/log-flags.js";
import { CLI, runCli } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

const BANNER_END = /^API server listening on https:\/\/\S+$/m;

/**
 * Runs `up` with stdout and stderr both appended to one file, so the file holds the lines in the order they were
 * written; stops the process a second after the banner (steady state) and returns the lines.
 */
async function upLines(args: readonly string[]): Promise<string[]> {
  const dir = tempDir("platform-ca-logs-");
  const file = join(dir, "output");
  const fd = openSync(file, "a");
  const child = spawn(process.execPath, [CLI, "up", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", ...args], {
    stdio: ["ignore", fd, fd],
    env: { ...process.env, PLATFORM_LOG_LEVEL: "" },
  });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 30_000;
  while (!BANNER_END.test(readFileSync(file, "utf8"))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`up did not start: ${readFileSync(file, "utf8")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
  child.kill("SIGTERM");
  await exited;
  return readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
}

/** The lines between the banner's last line and the first line of the stop ("stopping"). */
function afterBanner(lines: readonly string[]): string[] {
  const end = lines.findIndex((l) => BANNER_END.test(l));
  const stop = lines.findIndex((l) => l.includes("stopping"));
  expect(end).toBeGreaterThan(0);
  expect(stop).toBeGreaterThan(end);
  return lines.slice(end + 1, stop);
}

/** Python's pty module runs the command on a terminal and relays what it prints until `until` appears. */
const ON_A_TERMINAL = `
import os, pty, select, signal, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out, deadline = b"", time.time() + 30
while b"listening on" not in out and time.time() < deadline:
    if select.select([fd], [], [], 0.5)[0]:
        try:
            out += os.read(fd, 65536)
        except OSError:
            break
os.kill(pid, signal.SIGTERM)
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
`;

describe("platform-ca up logs", () => {
  it("writes coloured text lines on a terminal", () => {
    const env = { ...process.env, PLATFORM_LOG_LEVEL: "", NO_COLOR: "" };
    const args = [process.execPath, CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", join(tempDir(), "data")];
    const out = execFileSync("/usr/bin/python3", ["-c", ON_A_TERMINAL, ...args], { env, encoding: "utf8", timeout: 60_000 });
    expect(out).toContain("listening on");
    expect(out).not.toContain('{"level"');
    // pino-pretty's colours: INFO in green, the message in cyan.
    expect(out).toMatch(/\x1b\[32mINFO\x1b\[39m: .*storage opened/);
  });

  it("writes JSON lines when stderr is not a terminal, and the banner comes after every start-up line", async () => {
    const lines = await upLines([]);
    const banner = lines.findIndex((l) => l === "platform-ca is up");
    const logs = lines.slice(0, banner).map((l) => JSON.parse(l) as { level: number; component: string; msg: string });
    expect(logs.map((l) => l.msg)).toEqual(expect.arrayContaining(["storage opened", "created the cluster CA", "trust bundle published", "component started"]));
    expect(new Set(logs.map((l) => l.component))).toEqual(new Set(["platform-ca", "controller-manager"]));
    expect(logs.every((l) => l.level === 30)).toBe(true);
    expect(afterBanner(lines)).toEqual([]);
  }, 60_000);

  it("writes pino-pretty text lines with --log-format text", async () => {
    const lines = await upLines(["--log-format", "text"]);
    const banner = lines.findIndex((l) => l === "platform-ca is up");
    const logs = lines.slice(0, banner);
    expect(logs.length).toBeGreaterThan(5);
    for (const line of logs) expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: (platform-ca|controller-manager): \S/);
    expect(logs.some((l) => /INFO: platform-ca: storage opened \{"path":/.test(l))).toBe(true);
    expect(afterBanner(lines)).toEqual([]);
  }, 60_000);

  it("logs debug lines with -v 4 and only warnings with --log-level warn", async () => {
    const debug = (await upLines(["-v", "4"])).filter((l) => l.startsWith("{")).map((l) => (JSON.parse(l) as { level: number }).level);
    expect(debug).toContain(20);
    expect(debug).not.toContain(10);
    const quiet = await upLines(["--log-level", "warn"]);
    expect(quiet.filter((l) => l.startsWith("{"))).toEqual([]);
    expect(quiet).toContain("platform-ca is up");
  }, 90_000);

  it("refuses a bad level, a bad -v and both at once with one line and exit 2", async () => {
    const bad = await runCli(["up", "--log-level", "loud"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/'loud' is invalid\. Allowed choices are fatal, error, warn, info, debug, trace, silent/);
    const v = await runCli(["apiserver", "-v", "high", "--data-dir", tempDir()]);
    expect(v.code).toBe(2);
    expect(v.stderr).toContain("expected `-v` to be a whole number (e.g. -v 4 for debug)");
    const both = await runCli(["controller", "-v", "4", "--log-level", "info"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("give either --log-level or -v, not both");
    const env = await runCli(["controller"], { env: { PLATFORM_LOG_LEVEL: "verbose" } });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain("PLATFORM_LOG_LEVEL=verbose is not a level: use one of fatal, error, warn, info, debug, trace, silent");
  });

  it("maps klog verbosity as upstream components do: 0-3 info, 4 debug, 5 and above trace", () => {
    expect([0, 1, 2, 3, 4, 5, 9].map(levelOfVerbosity)).toEqual(["info", "info", "info", "info", "debug", "trace", "trace"]);
  });
});

// Wall and CPU time of whole child processes, as the CLI benchmarks compare them with other tools.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { hasCommand } from "../fixtures/process.js";

export interface ProcessRun {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
}

export interface ProcessTime {
  /** Milliseconds from the first start to the last exit. */
  readonly wall: number;
  /** Milliseconds of CPU (user + system) the processes used, from /usr/bin/time. */
  readonly cpu: number;
}

const scratch = mkdtempSync(join(os.tmpdir(), "process-time-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));

/**
 * Stops the bench with one line, before any work, when a command it runs is not installed: `needs` maps each command
 * (a name on PATH, or a path) to the Debian package that provides it.
 */
export function requireCommands(needs: Readonly<Record<string, string>>): void {
  const missing = Object.entries(needs).filter(([cmd]) => !hasCommand(cmd));
  if (missing.length === 0) return;
  console.error(`error: this benchmark runs ${missing.map(([cmd, pkg]) => `${cmd} (Debian: apt-get install ${pkg})`).join(", ")}, which ${missing.length === 1 ? "is" : "are"} not installed`);
  process.exit(1);
}

/** Runs the commands one after the other; any failure throws with the command's stderr. */
export function timeProcesses(runs: readonly ProcessRun[]): ProcessTime {
  const cpuFile = join(scratch, "cpu.txt");
  let cpu = 0;
  const start = process.hrtime.bigint();
  for (const c of runs) {
    const r = spawnSync("/usr/bin/time", ["-q", "-o", cpuFile, "-f", "%U %S", c.cmd, ...c.args], { env: { ...process.env, ...c.env }, cwd: c.cwd, stdio: ["ignore", "ignore", "pipe"] });
    if (r.status !== 0) throw new Error(`${c.cmd} ${c.args.join(" ")} failed (${r.status}): ${r.stderr?.toString() ?? r.error}`);
    const [user, system] = readFileSync(cpuFile, "utf8").trim().split(/\s+/).map(Number);
    cpu += (user! + system!) * 1000;
  }
  return { wall: Number(process.hrtime.bigint() - start) / 1e6, cpu };
}

/** The median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

// Builders for command-line tests: run the built `platform-ca` as a real process, openssl checks, file modes.
import { execFile, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { feedStdin } from "../fixtures/stdin.js";

export const REPO = fileURLToPath(new URL("../..", import.meta.url));
export const CLI = join(REPO, "dist/src/cli/platform-ca.js");

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CliOptions {
  readonly cwd?: string;
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** Runs `node dist/src/cli/platform-ca.js ...args` (built by `npm test`'s pretest step). */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd ?? REPO,
      env: { ...process.env, PLATFORM_DEBUG: "", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: 60_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    feedStdin(child.stdin, options.stdin);
  });
}

const execFileAsync = promisify(execFile);

/** Runs a tool; resolves with stdout+stderr and the exit code instead of throwing. */
export async function tool(cmd: string, args: readonly string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await execFileAsync(cmd, [...args], { timeout: 30_000 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** `openssl verify -CAfile ca cert` → true when openssl says OK. */
export async function opensslVerifies(caFile: string, certFile: string, purpose?: "sslserver" | "sslclient"): Promise<boolean> {
  const r = await tool("openssl", ["verify", ...(purpose ? ["-purpose", purpose] : []), "-CAfile", caFile, certFile]);
  return r.code === 0 && r.out.includes(": OK");
}

/** The text of `openssl x509 -text` for a certificate file. */
export async function x509Text(certFile: string): Promise<string> {
  return (await tool("openssl", ["x509", "-noout", "-text", "-in", certFile])).out;
}

/** Permission bits of a path (e.g. 0o600). */
export function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

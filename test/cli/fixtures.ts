// Builders for command-line tests: run the built `platform-ca` as a real process, openssl checks, file modes.
import { existsSync, statSync } from "node:fs";
import { runTool, type ToolRun } from "../fixtures/process.js";
import { PLATFORM_CA, REPO } from "../fixtures/repo.js";

export { REPO };
export const CLI = PLATFORM_CA;

export type CliResult = ToolRun;

export interface CliOptions {
  readonly cwd?: string;
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** Runs `node dist/src/cli/platform-ca.js ...args` (built by `npm test`'s pretest step). */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  return runTool(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO, env: { PLATFORM_DEBUG: "", ...options.env }, stdin: options.stdin, timeoutMs: 60_000 });
}

/** Runs a tool; resolves with stdout+stderr and the exit code (-1 when it had none) instead of throwing. */
export async function tool(cmd: string, args: readonly string[]): Promise<{ code: number; out: string }> {
  const r = await runTool(cmd, args, { timeoutMs: 30_000 });
  return { code: r.code ?? -1, out: r.stdout + r.stderr };
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

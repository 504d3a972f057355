// Real processes for platformctl tests: `platform-ca up` (HTTPS, admin.conf, controllers), platformctl and kubectl.
import { afterAll, beforeAll, expect } from "vitest";
import { join } from "node:path";
import { ensureBuilt } from "../../e2e/apiserver-process.js";
import { runTool, type ToolOptions, type ToolRun } from "../../fixtures/process.js";
import { startUp as startUpProcess } from "../../e2e/up-process.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { PLATFORM_CA, PLATFORMCTL, REPO } from "../../fixtures/repo.js";

export { PLATFORM_CA, REPO };
export const CTL = PLATFORMCTL;

export type Run = ToolRun;
export type RunOptions = ToolOptions;

/** Runs `node <script> ...args` to completion with no platformctl settings from the environment; a failure is a result. */
export function runNode(script: string, args: readonly string[], o: RunOptions = {}): Promise<Run> {
  return runTool(process.execPath, [script, ...args], { ...o, cwd: o.cwd ?? REPO, env: { PLATFORM_DEBUG: "", PLATFORMCONFIG: "", PLATFORMRC: "", ...o.env }, timeoutMs: o.timeoutMs ?? 60_000 });
}

export interface UpServer {
  readonly address: string;
  readonly dataDir: string;
  readonly adminConf: string;
  readonly caFile: string;
  readonly caKeyFile: string;
  /** HOME of the platformctl runs (discovery cache, preferences), private to this server. */
  readonly home: string;
  /** platformctl as the administrator. */
  ctl(args: readonly string[], o?: RunOptions): Promise<Run>;
  /** kubectl as the administrator (its own cache directory). */
  kubectl(args: readonly string[], input?: string): Promise<Run>;
  stop(): Promise<number | null>;
}

/** `platform-ca up` on a free loopback port with a fresh data directory. */
export async function startUp(): Promise<UpServer> {
  ensureBuilt();
  const dataDir = tempDir("platformctl-up-");
  const home = tempDir("platformctl-home-");
  const up = await startUpProcess({ dataDir });
  const adminConf = up.adminConfig;
  const kubeCache = join(home, "kubectl-cache");
  return {
    address: up.address,
    dataDir,
    adminConf,
    caFile: join(dataDir, "pki", "ca.crt"),
    caKeyFile: join(dataDir, "pki", "ca.key"),
    home,
    ctl: (args, o = {}) => runNode(CTL, ["--platformconfig", adminConf, ...args], { ...o, env: { HOME: home, ...o.env } }),
    kubectl: (args, input) => runTool("kubectl", ["--kubeconfig", adminConf, "--cache-dir", kubeCache, "--request-timeout", "20s", ...args], { stdin: input }),
    stop: () => up.stop(),
  };
}

/** `platform-ca up` (the API server and its controllers) for the tests of one file: started before them, stopped cleanly after. */
export function useUpServer(): { readonly up: UpServer } {
  let up: UpServer | undefined;
  beforeAll(async () => {
    up = await startUp();
  }, 180_000);
  afterAll(async () => {
    expect(await up?.stop()).toBe(0);
  });
  return {
    get up() {
      return up!;
    },
  };
}

/**
 * Runs the same arguments through platformctl and kubectl against `up`: stdout, exit code and stderr must match
 * (kubectl's "Error from server (NotFound): " prefix is platformctl's "error: "). Returns the common stdout.
 */
export async function sameAsKubectl(up: UpServer, args: readonly string[]): Promise<string> {
  const [ours, theirs] = await Promise.all([up.ctl(args), up.kubectl(args)]);
  expect(ours.stdout).toBe(theirs.stdout);
  expect(ours.stderr).toBe(theirs.stderr.replaceAll("Error from server (NotFound): ", "error: "));
  expect(ours.code).toBe(theirs.code);
  return ours.stdout;
}

/** Objects as the API returns them, with what differs between runs replaced by placeholders. */
export function normalize(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uid>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, "<time>")
    .replace(/("resourceVersion":\s*")\d+"/g, '$1<rv>"')
    .replace(/(resourceVersion: )"\d+"/g, '$1"<rv>"');
}

/** stderr of a failed run: the first line says what went wrong, no stack trace anywhere. */
export function oneClearError(r: Run): string {
  const lines = r.stderr.trim().split("\n");
  if (!lines[0]!.startsWith("error:") || lines.some((l) => /^\s+at \S+ \(|node:internal/.test(l))) throw new Error(`not one clear error line: ${r.stderr}`);
  return lines[0]!;
}

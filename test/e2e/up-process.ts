// Runs `platform-ca up` as a real process for end-to-end tests, and kubectl with the admin.conf it writes.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { Kubectl } from "./apiserver-process.js";
import { tempDir } from "../fixtures/temp-dir.js";

const CLI = new URL("../../dist/src/cli/platform-ca.js", import.meta.url).pathname;
const START_TIMEOUT_MS = 30_000;

export interface UpProcess {
  readonly child: ChildProcess;
  /** The https:// address printed on the banner's last line. */
  readonly address: string;
  readonly dataDir: string;
  readonly adminConfig: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface UpOptions {
  readonly dataDir?: string;
  readonly args?: readonly string[];
}

/** Starts `platform-ca up --listen 127.0.0.1:0`; resolves once the banner names the address (everything is running then). */
export async function startUp(o: UpOptions = {}): Promise<UpProcess> {
  const dataDir = o.dataDir ?? join(tempDir("platform-ca-up-"), "data");
  const child = spawn(process.execPath, [CLI, "up", "--data-dir", dataDir, "--listen", "127.0.0.1:0", ...(o.args ?? [])], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PLATFORM_LOG_LEVEL: "info" },
  });
  const output = { out: "", err: "" };
  child.stderr!.on("data", (d) => (output.err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const address = new Promise<string>((resolve) => {
    child.stdout!.on("data", (d) => {
      output.out += d;
      const m = /listening on (https:\/\/\S+)/.exec(output.out);
      if (m) resolve(m[1]!);
    });
  });
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    address,
    exited.then((code) => new Error(`platform-ca up exited with ${code}: ${output.err}`)),
    new Promise<Error>((resolve) => (timer = setTimeout(() => resolve(new Error(`platform-ca up did not start in time: ${output.err}`)), START_TIMEOUT_MS))),
  ]);
  clearTimeout(timer);
  if (outcome instanceof Error) {
    child.kill("SIGKILL");
    throw outcome;
  }
  return {
    child,
    address: outcome,
    dataDir,
    adminConfig: join(dataDir, "admin.conf"),
    stdout: () => output.out,
    stderr: () => output.err,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** kubectl with a kubeconfig file (no insecure flag) and a discovery cache of its own. */
export function kubectlWith(kubeconfig: string, cacheDir = tempDir("platform-ca-kubectl-")): Kubectl {
  const baseArgs = ["--kubeconfig", kubeconfig, "--cache-dir", cacheDir];
  const run = (args: readonly string[], input?: string) =>
    execFileSync("kubectl", [...baseArgs, "--request-timeout", "20s", ...args], { input, encoding: "utf8", timeout: 30_000, stdio: ["pipe", "pipe", "pipe"] });
  return Object.assign(run, { baseArgs });
}

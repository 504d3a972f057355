// Runs `platform-ca apiserver` as a real process for end-to-end tests, and kubectl against it with its own kubeconfig.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../fixtures/temp-dir.js";

const REPO = new URL("../../", import.meta.url).pathname;
const CLI = join(REPO, "dist/src/cli/platform-ca.js");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds dist when it is missing or older than the sources (npm test builds first; a lone vitest run may not). */
export function ensureBuilt(): void {
  if (existsSync(CLI) && newestMtime(join(REPO, "dist/src")) >= newestMtime(join(REPO, "src"))) return;
  // tsc emits even when it reports type errors elsewhere; the CLI's presence is what this test needs.
  spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "ignore", timeout: 240_000 });
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing after npm run build`);
}

export interface ApiserverProcess {
  readonly child: ChildProcess;
  readonly address: string;
  readonly dataDir: string;
  /** Everything the process wrote to stderr so far (pino JSON lines). */
  stderr(): string;
  /** SIGTERM and wait for exit; resolves to the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  readonly dataDir?: string;
  readonly groupSuffix?: string;
  readonly extraArgs?: readonly string[];
}

export function startApiserver(o: StartOptions = {}): Promise<ApiserverProcess> {
  const dataDir = o.dataDir ?? tempDir("platform-ca-apiserver-");
  const args = [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...(o.groupSuffix ? ["--group-suffix", o.groupSuffix] : []), ...(o.extraArgs ?? [])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PLATFORM_LOG_LEVEL: "info" } });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`apiserver did not start within 30 s: ${err}`));
    }, 30_000);
    const early = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`apiserver exited with ${code}: ${err}`));
    };
    child.once("exit", early);
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.off("exit", early);
      resolve({
        child,
        address: m[1]!,
        dataDir,
        stderr: () => err,
        async stop(signal = "SIGTERM") {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    });
  });
}

/** A kubeconfig for the server and a per-server discovery cache, so nothing leaks between servers. */
export type Kubectl = ((args: readonly string[], input?: string) => string) & { readonly baseArgs: readonly string[] };

export function kubectlFor(address: string): Kubectl {
  const dir = tempDir("platform-ca-kubectl-");
  const config = join(dir, "kubeconfig");
  writeFileSync(
    config,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: ${address}\nusers:\n- name: admin\n  user: {}\ncontexts:\n- name: local\n  context: {cluster: local, user: admin, namespace: default}\ncurrent-context: local\n`,
  );
  const baseArgs = ["--kubeconfig", config, "--cache-dir", join(dir, "cache")];
  const run = (args: readonly string[], input?: string) =>
    execFileSync("kubectl", [...baseArgs, "--request-timeout", "20s", ...args], { input, encoding: "utf8", timeout: 30_000, stdio: ["pipe", "pipe", "pipe"] });
  return Object.assign(run, { baseArgs });
}

/** Runs kubectl expecting a failure; returns its stderr. */
export function kubectlFails(kubectl: Kubectl, args: readonly string[], input?: string): string {
  try {
    kubectl(args, input);
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
  throw new Error(`kubectl ${args.join(" ")} succeeded unexpectedly`);
}

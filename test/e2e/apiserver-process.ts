// Runs `platform-ca apiserver` as a real process for end-to-end tests, and kubectl against it with its own kubeconfig.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startProcess, type Proc } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { PLATFORM_CA, REPO } from "../fixtures/repo.js";

const CLI = PLATFORM_CA;

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

/** `dir` (created) with `platform-ca` and `platformctl` scripts that run the built CLIs: for PATH, or node_modules/.bin. */
export function builtCommands(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (const bin of ["platformctl", "platform-ca"]) {
    const path = join(dir, bin);
    writeFileSync(path, `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, "dist/src/cli", `${bin}.js`)}" "$@"\n`);
    chmodSync(path, 0o755);
  }
  return dir;
}

export interface ApiserverProcess extends Proc {
  /** The http:// address the banner names. */
  readonly address: string;
  readonly dataDir: string;
}

export interface StartOptions {
  readonly dataDir?: string;
  readonly groupSuffix?: string;
  readonly extraArgs?: readonly string[];
}

export async function startApiserver(o: StartOptions = {}): Promise<ApiserverProcess> {
  const dataDir = o.dataDir ?? tempDir("platform-ca-apiserver-");
  const args = [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...(o.groupSuffix ? ["--group-suffix", o.groupSuffix] : []), ...(o.extraArgs ?? [])];
  const { proc, match } = await startProcess(process.execPath, args, /listening on (http:\/\/\S+)/, { env: { PLATFORM_LOG_LEVEL: "info" }, what: "apiserver" });
  return { ...proc, address: match, dataDir };
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
  return kubectlWith(config, join(dir, "cache"));
}

/** kubectl with a kubeconfig file (no insecure flag) and a discovery cache of its own. */
export function kubectlWith(kubeconfig: string, cacheDir = tempDir("platform-ca-kubectl-")): Kubectl {
  const baseArgs = ["--kubeconfig", kubeconfig, "--cache-dir", cacheDir];
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

/** The namespaces, Secrets and CSRs, each `kind/namespace/name=resourceVersion`, sorted. */
export function objectVersions(kubectl: Kubectl): string[] {
  const template = '{range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\\n"}{end}';
  return kubectl(["get", "namespaces,secrets,certificatesigningrequests", "--all-namespaces", "-o", `jsonpath=${template}`]).trim().split("\n").sort();
}

/** The resourceVersion of one object (`kind`, `name`, flags). */
export const resourceVersion = (kubectl: Kubectl, what: readonly string[]): number => Number(kubectl(["get", ...what, "-o", "jsonpath={.metadata.resourceVersion}"]));

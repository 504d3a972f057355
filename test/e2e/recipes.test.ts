// The documented recipes run as written: README's first certificate, and the two-process layout of docs/operations.md.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { shellBlocks } from "../fixtures/doc-blocks.js";
import { builtCommands, ensureBuilt } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";
import { PLATFORMCTL, REPO } from "../fixtures/repo.js";

const run = promisify(execFile);

/**
 * A directory laid out as a clone is for `npx`: node_modules/.bin holds the package's two commands (npm links them
 * so in a project that depends on platform-ca; in the clone itself npx finds them in package.json "bin").
 */
function cloneLike(): string {
  const dir = mkdtempSync(join(tmpdir(), "platform-ca-recipe-"));
  builtCommands(join(dir, "node_modules", ".bin"));
  return dir;
}

/** The environment of a new terminal: no client configuration chosen yet. */
function freshEnv(): NodeJS.ProcessEnv {
  const { PLATFORMCONFIG: _c, KUBECONFIG: _k, ...env } = process.env;
  return { ...env, PLATFORMRC: "off", npm_config_update_notifier: "false" };
}

const bash = (script: string, cwd: string) => run("bash", ["-euo", "pipefail", "-c", script], { cwd, env: freshEnv(), timeout: 120_000 });

describe("README: Your first certificate", () => {
  let up: UpProcess | undefined;
  afterAll(async () => {
    expect(await up?.stop()).toBe(0);
  });

  it("keeps the Quick start at two commands", () => {
    const [quick] = shellBlocks("README.md", "## Quick start");
    const commands = quick!.split("\n").filter((l) => l.trim() !== "");
    expect(commands).toHaveLength(2);
    expect(commands[0]).toMatch(/^npm ci && npm start\b/);
  });

  it("npx finds platformctl in the clone itself, without a global install", async () => {
    // Scripts are skipped: npx installs the clone into its cache as a link, and its install script would rebuild the addon.
    const { stdout } = await run("npx", ["platformctl", "--help"], { cwd: REPO, env: { ...freshEnv(), npm_config_ignore_scripts: "true" }, timeout: 60_000 });
    expect(stdout).toMatch(/^Usage: platformctl/);
  });

  it("runs the recipe verbatim against a fresh `up`: the certificate is issued and verifies against the published bundle", async () => {
    ensureBuilt();
    const [recipe] = shellBlocks("README.md", "## Your first certificate");
    expect(recipe).toContain("openssl verify");
    const dir = cloneLike();
    up = await startUp({ dataDir: join(dir, ".platform") });
    const { stdout, stderr } = await bash(recipe!, dir);
    // What it waited for depends on how fast the controllers were; that it ended with the files does not.
    expect(stderr).toContain("certificate written to node-1.crt, key to node-1.key");
    expect(stdout).toMatch(/^node-1\s.*Approved,Issued$/m);
    expect(stdout).toContain("node-1.crt: OK");
    expect(stdout).toMatch(/^Chain:\s+verified against ClusterTrustBundle platform\.io:apiserver-client-nodeagent:[0-9a-f]{16} /m);
    // Checked again here, independently of the recipe's own output.
    expect(execFileSync("openssl", ["verify", "-CAfile", join(dir, "node-agent-ca.pem"), join(dir, "node-1.crt")], { encoding: "utf8" })).toContain(": OK");
    expect(execFileSync("openssl", ["x509", "-in", join(dir, "node-1.crt"), "-noout", "-subject"], { encoding: "utf8" })).toMatch(/O ?= ?system:nodes, CN ?= ?system:node:node-1/);
    expect(statSync(join(dir, "node-1.key")).mode & 0o777).toBe(0o600);
  }, 180_000);
});

describe("docs/operations.md: Two processes", () => {
  let apiserver: UpProcess | undefined;
  let controller: ChildProcess | undefined;
  afterAll(async () => {
    if (controller?.pid !== undefined && controller.exitCode === null) process.kill(-controller.pid, "SIGTERM");
    expect(await apiserver?.stop()).toBe(0);
  });

  it("runs the controllers under their own identity, which issues and may do only what its role grants", async () => {
    ensureBuilt();
    const [serverLine, controllerBlock, checkBlock] = shellBlocks("docs/operations.md", "## Two processes");
    expect(serverLine!.trim()).toBe("npx platform-ca apiserver --data-dir data --listen 127.0.0.1:6443");
    const dir = cloneLike();
    // The first block as written, on a free port rather than 6443.
    apiserver = await startUp({ command: "apiserver", dataDir: join(dir, "data") });

    controller = spawn("bash", ["-euo", "pipefail", "-c", controllerBlock!], { cwd: dir, env: freshEnv(), detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    controller.stdout!.on("data", (d) => (out += d));
    controller.stderr!.on("data", (d) => (err += d));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the controllers did not start: ${err}`)), 60_000);
      controller!.once("exit", (code) => reject(new Error(`the controller block exited with ${code}: ${err}`)));
      controller!.stdout!.on("data", () => {
        if (out.includes("controller manager running")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    expect(statSync(join(dir, "controller.key")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, "controller.conf"), "utf8")).toContain(`server: ${apiserver.address}`);

    const { stdout } = await bash(checkBlock!, dir);
    expect(stdout).toMatch(/^Chain:\s+verified against ClusterTrustBundle /m);
    expect(stdout).toMatch(/^Username\s+system:platform-ca:controller$/m);
    expect(stdout).toMatch(/^yes\nno\n$/m);
    // The controllers ran in that process: the API server alone runs none.
    expect(err).toContain('"msg":"trust bundle published"');
    const bundle = execFileSync(
      process.execPath,
      [PLATFORMCTL, "--platformconfig", join(dir, "data", "admin.conf"), "get", "clustertrustbundles", "--field-selector", "spec.signerName=platform.io/apiserver-client-nodeagent", "-o", "jsonpath={.items[0].spec.trustBundle}"],
      { encoding: "utf8", env: freshEnv() },
    );
    writeFileSync(join(dir, "bundle.pem"), bundle);
    expect(execFileSync("openssl", ["verify", "-CAfile", join(dir, "bundle.pem"), join(dir, "node-2.crt")], { encoding: "utf8" })).toContain(": OK");
  }, 180_000);
});

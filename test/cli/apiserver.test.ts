// `platform-ca apiserver` and `up` as processes: usage errors exit 2, bad input files fail before the data directory is
// touched, the secure server prints how to connect and stops on SIGINT, private files are kept to their owner, logs
// name each key once.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { findDuplicateKeys } from "../../src/api/schema/duplicate-keys.js";
import { readAdminConfig } from "../../src/apiserver/bootstrap/admin-config.js";
import { startCluster, startNodeArgs } from "../controller/controllers/cluster.js";
import { ensureBuilt } from "../e2e/apiserver-process.js";
import { startUp } from "../e2e/up-process.js";
import { CLI, mode, runCli } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";

beforeAll(() => ensureBuilt(), 240_000);

describe("platform-ca apiserver and up: flags", () => {
  it.each([
    ["--insecure-local beside a token file", ["apiserver", "--data-dir", "x", "--insecure-local", "--token-file", "t.csv"], /--insecure-local has no authentication and no admission chain, so --token-file cannot be used with it/],
    ["--insecure-local beside --anonymous-auth", ["apiserver", "--data-dir", "x", "--insecure-local", "--anonymous-auth"], /so --anonymous-auth cannot/],
    ["--insecure-local beside --authentication-config", ["apiserver", "--data-dir", "x", "--insecure-local", "--authentication-config", "a.yaml"], /so --authentication-config cannot/],
    ["--insecure-local beside --authorization-config", ["apiserver", "--data-dir", "x", "--insecure-local", "--authorization-config", "a.yaml"], /so --authorization-config cannot be used with it/],
    ["--insecure-local off loopback", ["apiserver", "--data-dir", "x", "--insecure-local", "--listen", "0.0.0.0:6443"], /--insecure-local serves only on loopback/],
    ["apiserver without --data-dir", ["apiserver"], /--data-dir is required/],
    ["a malformed --listen", ["up", "--listen", "6443"], /expected `--listen` to be HOST:PORT/],
  ])("refuses %s with exit code 2", async (_name, args, message) => {
    const r = await runCli(args, { cwd: tempDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("documents the identity flags of up", async () => {
    const r = await runCli(["up", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--request-timeout <duration> .*\(default: "1m0s"\)/);
    expect(r.stdout).toMatch(/--min-request-timeout <seconds> .*\(default: "1800"\)/);
    expect(r.stdout).toMatch(/--event-ttl <duration> .*\(default: "1h0m0s"\)/);
    for (const flag of ["--data-dir <dir>", "--listen <host:port>", "--group-suffix <suffix>", "--token-file <file>", "--client-ca-file <file>", "--anonymous-auth", "--authentication-config <file>"]) expect(r.stdout).toContain(flag);
    expect(r.stdout).toContain('(default: ".platform")');
  });

  it("fails with the token file's problem, naming its line", async () => {
    const dir = tempDir();
    const tokens = join(dir, "tokens.csv");
    writeFileSync(tokens, "only-two,columns\n");
    const r = await runCli(["apiserver", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tokens\.csv line 1: expected 3 or 4 columns/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it.each([
    ["a missing token file", "up", (dir: string) => ["--token-file", join(dir, "missing.csv")], /^error: cannot read token file .*missing\.csv: ENOENT/],
    ["a malformed token file", "up", (dir: string) => ["--token-file", file(dir, "tokens.csv", "only-two,columns\n")], /tokens\.csv line 1: expected 3 or 4 columns/],
    ["a missing client CA file", "apiserver", (dir: string) => ["--client-ca-file", join(dir, "missing.crt")], /^error: cannot read the client CA file .*missing\.crt: ENOENT/],
    ["a client CA file without a certificate", "up", (dir: string) => ["--client-ca-file", file(dir, "empty.crt", "no PEM here\n")], /the client CA file .*empty\.crt: no PEM block found/],
    ["a bad --group-suffix", "apiserver", () => ["--group-suffix", "nodots"], /expected `--group-suffix` to be a DNS name/],
    ["a --request-timeout that is not a duration", "apiserver", () => ["--request-timeout", "soon"], /^error: expected `--request-timeout` to be a positive duration such as "1m0s", "30s" or "500ms", got "soon"\n$/],
    ["a negative --request-timeout", "up", () => ["--request-timeout", "-1s"], /^error: expected `--request-timeout` to be a positive duration .*, got "-1s"\n$/],
    ["a --request-timeout above a day", "up", () => ["--request-timeout", "48h"], /^error: expected `--request-timeout` to be at most 24h, got "48h"\n$/],
    ["an --event-ttl that is not a duration", "apiserver", () => ["--event-ttl", "1 hour"], /^error: expected `--event-ttl` to be a positive duration such as "1m0s", "30s" or "500ms", got "1 hour"\n$/],
    ["an --event-ttl under a second", "up", () => ["--event-ttl", "500ms"], /^error: expected `--event-ttl` to be between 1s and 8760h, got "500ms"\n$/],
    ["an --event-ttl over a year", "apiserver", () => ["--event-ttl", "9000h"], /^error: expected `--event-ttl` to be between 1s and 8760h, got "9000h"\n$/],
    ["a --min-request-timeout that is not whole seconds", "apiserver", () => ["--min-request-timeout", "30m"], /^error: expected `--min-request-timeout` to be whole seconds \(0 or more\), got "30m"\n$/],
    ["a missing authentication configuration", "up", (dir: string) => ["--authentication-config", join(dir, "missing.yaml")], /^error: cannot read authentication configuration .*missing\.yaml: ENOENT/],
    [
      "an authentication configuration with a bad issuer",
      "apiserver",
      (dir: string) => ["--authentication-config", file(dir, "authn.yaml", "apiVersion: apiserver.config.platform.io/v1\nkind: AuthenticationConfiguration\njwt:\n  - issuer: {url: http://idp.example.com, audiences: [a]}\n    claimMappings: {username: {claim: sub}}\n")],
      /invalid authentication configuration .*authn\.yaml: 2 problems: expected `jwt\[0\]\.issuer\.url` an https:\/\/ URL, got "http:\/\/idp\.example\.com"; expected `jwt\[0\]\.claimMappings\.username\.prefix` to be set when `claim` is set/,
    ],
    [
      "an authentication configuration with `anonymous` beside --anonymous-auth",
      "up",
      (dir: string) => ["--anonymous-auth", "--authentication-config", file(dir, "authn.yaml", "apiVersion: apiserver.config.platform.io/v1\nkind: AuthenticationConfiguration\nanonymous: {enabled: true}\n")],
      /expected `anonymous` not to be set when the --anonymous-auth flag is given/,
    ],
  ])("refuses %s (%s) before creating anything in the data directory", async (_name, command, args, message) => {
    const dir = tempDir();
    const dataDir = join(dir, "data");
    const r = await runCli([command, "--data-dir", dataDir, "--listen", "127.0.0.1:0", ...args(dir)]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(existsSync(dataDir)).toBe(false);
  });
});

/** Writes `text` to `dir/name`; returns the path. */
function file(dir: string, name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}

/** The pino lines of a process's stderr. */
const logLines = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("{"));

describe("platform-ca up: what it says", () => {
  it("names the wildcard address it binds, and the loopback address admin.conf uses", async () => {
    const up = await startUp({ args: ["--listen", "0.0.0.0:0"] });
    try {
      const port = /^API server listening on https:\/\/0\.0\.0\.0:(\d+) /m.exec(up.stdout())?.[1];
      expect(port).toBeDefined();
      expect(up.stdout()).toContain(`  API server   https://0.0.0.0:${port}, every interface (group suffix platform.io)\n`);
      expect(up.stdout()).toContain(`\nAPI server listening on https://0.0.0.0:${port} (every interface; admin.conf connects through https://127.0.0.1:${port})\n`);
      expect(readAdminConfig(readFileSync(up.adminConfig, "utf8"))!.server).toBe(`https://127.0.0.1:${port}`);
    } finally {
      expect(await up.stop()).toBe(0);
    }
  });

  it("runs up as npm start does: with V8's helper threads one fewer than the cores, so the server's thread waits less for one", async () => {
    // docs/operations.md (Running it): on 2 cores, Node's default of 4 helpers made the burst ~4% longer for the same work.
    expect(startNodeArgs()).toEqual(["--v8-pool-size=0"]);
    const cluster = await startCluster({ mode: "up" });
    try {
      const cmdline = readFileSync(`/proc/${cluster.apiserver.child.pid}/cmdline`, "utf8").split("\0");
      expect(cmdline.slice(1, 3)).toEqual(["--v8-pool-size=0", CLI]);
      // Its controllers' requests are handed to the server's thread over the in-thread channel (no socket, no HTTP).
      const running = logLines(cluster.apiserver.stderr()).find((l) => l.includes('"msg":"controller manager running"'));
      expect(JSON.parse(running!).server).toBe("in-thread channel");
    } finally {
      await cluster.stop();
    }
  });

  it("writes each key once on every log line, of up and of a leader-electing controller beside it", async () => {
    const cluster = await startCluster({ mode: "up" });
    let controllerErr = "";
    try {
      const controller = await cluster.startController();
      await until(() => controller.stderr().includes('"msg":"became leader"') || undefined, "the controller to lead");
      expect(await controller.stop()).toBe(0);
      controllerErr = controller.stderr();
    } finally {
      await cluster.stop();
    }
    const lines = [...logLines(cluster.apiserver.stderr()), ...logLines(controllerErr)];
    // The lines that used to repeat a key: a component started by up, the ops server of the controllers, the lease.
    for (const msg of ["component started", "serving /healthz, /readyz and /metrics", "became leader"]) expect(lines.some((l) => l.includes(`"msg":"${msg}"`))).toBe(true);
    expect(lines.map((l) => ({ line: l, twice: findDuplicateKeys(l) })).filter((x) => x.twice.length > 0)).toEqual([]);
  });

  it("narrows private files others can read to 0600 at start, naming each and its old mode", async () => {
    const dataDir = join(tempDir(), "data");
    const first = await startUp({ dataDir });
    expect(await first.stop()).toBe(0);
    const files = ["pki/ca.key", "pki/apiserver.key", "pki/sa-signing-key.pem", "admin.conf", "store.db"];
    for (const f of files) chmodSync(join(dataDir, f), 0o644);
    chmodSync(join(dataDir, "pki"), 0o755);
    const again = await startUp({ dataDir });
    expect(await again.stop()).toBe(0);
    const warnings = logLines(again.stderr()).map((l) => JSON.parse(l)).filter((l) => l.level === 40 && l.was !== undefined);
    for (const f of files) {
      expect(mode(join(dataDir, f))).toBe(0o600);
      expect(warnings).toContainEqual(expect.objectContaining({ path: join(dataDir, f), was: "0644", mode: "0600", msg: expect.stringContaining(`${join(dataDir, f)} was mode 0644`) }));
    }
    expect(mode(join(dataDir, "pki"))).toBe(0o700);
    expect(warnings).toContainEqual(expect.objectContaining({ path: join(dataDir, "pki"), was: "0755", mode: "0700" }));
    expect(mode(join(dataDir, "pki", "ca.crt"))).toBe(0o644);
  });

  it("says plainly that another process holds the data directory", async () => {
    const up = await startUp();
    try {
      const r = await runCli(["up", "--data-dir", up.dataDir, "--listen", "127.0.0.1:0"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`error: cannot open storage at ${join(up.dataDir, "store.db")}: another process (probably another platform-ca on the same data directory) holds it`);
    } finally {
      expect(await up.stop()).toBe(0);
    }
  });

  it("names the port it tried and --listen, in one line before any log line, when the port is taken", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const r = await runCli(["up", "--data-dir", join(tempDir(), "data"), "--listen", `127.0.0.1:${port}`]);
      expect(r.code).toBe(1);
      expect(logLines(r.stderr)).toEqual([]);
      expect(r.stderr.split("\n").filter(Boolean)).toEqual([expect.stringMatching(new RegExp(`^error: port ${port} on 127\\.0\\.0\\.1 is already in use .*--listen`))]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});

describe("platform-ca apiserver (secure by default)", () => {
  it("serves HTTPS, prints the kubectl command line for admin.conf, and exits 0 on SIGINT", async () => {
    const dataDir = join(tempDir(), "data");
    const child = spawn(process.execPath, [CLI, "apiserver", "--data-dir", dataDir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise((resolve) => child.once("exit", resolve));
    let out = "";
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no address within 30 s")), 30_000);
        child.stdout.on("data", (d) => {
          out += d;
          if (/listening on https:\/\/127\.0\.0\.1:\d+\n/.test(out)) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once("exit", (code) => reject(new Error(`exited with ${code}`)));
      });
      expect(out).toMatch(/^platform-ca apiserver is up\n {2}API server {3}https:\/\/127\.0\.0\.1:\d+ \(group suffix platform\.io\)\n {2}data {9}\S+ \(store\.db, pki\/, admin\.conf\)\n {2}admin\.conf /);
      expect(out).toContain(`kubectl --kubeconfig ${join(dataDir, "admin.conf")} get csr`);
      expect(out).not.toContain("platform-ca is up");
      expect(out).not.toContain("components");
    } finally {
      // Stopped even when an expectation failed, so no server outlives the test.
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  });
});

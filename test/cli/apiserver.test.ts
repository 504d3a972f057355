// `platform-ca apiserver` and `up` as processes: usage errors exit 2, the secure server prints how to connect and stops on SIGINT.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../e2e/apiserver-process.js";
import { CLI, runCli, tempDir } from "./fixtures.js";

beforeAll(() => ensureBuilt(), 240_000);

describe("platform-ca apiserver and up: flags", () => {
  it.each([
    ["--insecure-local beside a token file", ["apiserver", "--data-dir", "x", "--insecure-local", "--token-file", "t.csv"], /--insecure-local has no authentication, so --token-file cannot be used with it/],
    ["--insecure-local beside --anonymous-auth", ["apiserver", "--data-dir", "x", "--insecure-local", "--anonymous-auth"], /so --anonymous-auth cannot/],
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
    for (const flag of ["--data-dir <dir>", "--listen <host:port>", "--group-suffix <suffix>", "--token-file <file>", "--client-ca-file <file>", "--anonymous-auth"]) expect(r.stdout).toContain(flag);
    expect(r.stdout).toContain('(default: ".platform")');
  });

  it("fails with the token file's problem, naming its line", async () => {
    const dir = tempDir();
    const tokens = join(dir, "tokens.csv");
    writeFileSync(tokens, "only-two,columns\n");
    const r = await runCli(["apiserver", "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", "--token-file", tokens]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tokens\.csv line 1: expected 3 or 4 columns/);
  });
});

describe("platform-ca apiserver (secure by default)", () => {
  it("serves HTTPS, prints the kubectl command line for admin.conf, and exits 0 on SIGINT", async () => {
    const dataDir = join(tempDir(), "data");
    const child = spawn(process.execPath, [CLI, "apiserver", "--data-dir", dataDir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
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
    expect(out).toContain(`kubectl --kubeconfig ${join(dataDir, "admin.conf")} get csr`);
    expect(out).not.toContain("platform-ca is up");
    child.kill("SIGINT");
    expect(await new Promise((resolve) => child.once("exit", resolve))).toBe(0);
  });
});

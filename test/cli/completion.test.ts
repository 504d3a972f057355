// Completion scripts run in a real bash: platform-ca's commands and flags, platformctl's names through the cache file.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { COMPLETION_TTL_SECONDS } from "../../src/cli/ctl/complete-names.js";
import { CTL, PLATFORM_CA, runNode, useUpServer } from "./ctl/fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

const exec = promisify(execFile);
const ctx = useUpServer();

/** A directory with `name` on PATH running `script` (a built CLI), and the bash completion script of that CLI. */
async function shellFor(name: string, script: string, body = `exec ${process.execPath} ${script} "$@"`) {
  const dir = tempDir();
  const bin = join(dir, "bin");
  await exec("mkdir", ["-p", bin]);
  writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  const completion = join(dir, `${name}.bash`);
  writeFileSync(completion, (await runNode(script, ["completion", "bash"])).stdout);
  return { dir, bin, completion };
}

/**
 * Completes `line` (the last word is the one being completed) in bash with `completion` loaded; returns the candidates
 * and how long the completion function took (bash's own clock, start-up not counted).
 */
async function complete(completion: string, fn: string, line: string, env: Record<string, string>, cwd: string) {
  const words = line.split(" ");
  const cmd = `source ${completion}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; s=$EPOCHREALTIME; ${fn}; e=$EPOCHREALTIME; echo "\${COMPREPLY[*]}"; echo "$s $e"`;
  const { stdout } = await exec("bash", ["-c", cmd], { env: { ...process.env, PLATFORMCONFIG: "", KUBECONFIG: "", ...env }, cwd });
  const [reply, times] = stdout.split("\n");
  const [s, e] = times!.split(" ").map(Number);
  return { words: reply!.split(" ").filter(Boolean).sort(), ms: (e! - s!) * 1000 };
}

describe("platform-ca completion", () => {
  it.each(["bash", "zsh"])("prints a %s script bash can parse", async (shell) => {
    const r = await runNode(PLATFORM_CA, ["completion", shell]);
    expect(r.code).toBe(0);
    const file = join(tempDir(), `c.${shell}`);
    writeFileSync(file, r.stdout);
    await exec("bash", ["-n", file]);
    expect(r.stdout).toContain("complete -o default -F _platform_ca platform-ca");
    expect(r.stdout).not.toContain("__complete");
  });

  it("prints a fish script completing from the same command tree", async () => {
    const r = await runNode(PLATFORM_CA, ["completion", "fish"]);
    expect(r.stdout).toContain("complete -c platform-ca -f -a '(__platform_ca_complete)'");
    expect(r.stdout).toMatch(/case "dev-certs"\n\s+printf '%s\\n' 'issue'/);
    expect(r.stdout).toContain("'--log-format'");
  });

  it("completes commands, subcommands and flags in bash", async () => {
    const { completion, dir } = await shellFor("platform-ca", PLATFORM_CA);
    const c = (line: string) => complete(completion, "_platform_ca", line, {}, dir).then((r) => r.words);
    expect(await c("platform-ca dev-certs is")).toEqual(["issue"]);
    expect(await c("platform-ca co")).toEqual(["completion", "controller"]);
    expect(await c("platform-ca up --log-f")).toEqual(["--log-format"]);
  });

  it("refuses another shell in one line naming the three", async () => {
    const r = await runNode(PLATFORM_CA, ["completion", "tcsh"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error: unsupported shell type "tcsh": use bash, zsh, fish\n');
  });
});

describe("platformctl completion of names", () => {
  it("honours --platformconfig and -n on the line, then answers from the cache in under 100 ms without the server", async () => {
    const { completion, dir } = await shellFor("platformctl", CTL);
    const env = { HOME: dir, PATH: `${join(dir, "bin")}:${process.env.PATH}` };
    const line = `platformctl --platformconfig ${ctx.up.adminConf} get namespaces -n default `;
    expect((await complete(completion, "_platformctl", line, env, dir)).words).toEqual(["default", "platform-system"]);
    const files = readdirSync(join(dir, ".platform/cache/completion"));
    expect(files).toHaveLength(1);
    const [expires, ...names] = readFileSync(join(dir, ".platform/cache/completion", files[0]!), "utf8").trim().split("\n");
    expect(names).toEqual(["default", "platform-system"]);
    expect(Number(expires) - Date.now() / 1000).toBeGreaterThan(COMPLETION_TTL_SECONDS.names - 30);

    // platformctl now fails: the answer can only come from the cache file.
    const broken = await shellFor("platformctl", CTL, "exit 1");
    const envBroken = { HOME: dir, PATH: `${broken.bin}:${process.env.PATH}` };
    // Best of three: the machine running the tests may be busy, the answer itself takes a few ms.
    const cached = [];
    for (let i = 0; i < 3; i++) cached.push(await complete(completion, "_platformctl", line, envBroken, dir));
    for (const c of cached) expect(c.words).toEqual(["default", "platform-system"]);
    expect(Math.min(...cached.map((c) => c.ms))).toBeLessThan(100);
    // Another namespace is another question: not answered from that file.
    expect((await complete(completion, "_platformctl", line.replace("-n default", "-n other"), envBroken, dir)).words).toEqual([]);
  });

  it("asks again once the cached names expired, and completes resource types", async () => {
    const { completion, dir } = await shellFor("platformctl", CTL);
    const env = { HOME: dir, PATH: `${join(dir, "bin")}:${process.env.PATH}` };
    const line = `platformctl get --kubeconfig ${ctx.up.adminConf} namespaces `;
    await complete(completion, "_platformctl", line, env, dir);
    const cacheDir = join(dir, ".platform/cache/completion");
    const file = join(cacheDir, readdirSync(cacheDir)[0]!);
    writeFileSync(file, `${Math.floor(Date.now() / 1000) - 1}\nstale-name\n`);
    expect((await complete(completion, "_platformctl", line, env, dir)).words).toEqual(["default", "platform-system"]);
    expect((await complete(completion, "_platformctl", `platformctl --kubeconfig ${ctx.up.adminConf} get certificatesigning`, env, dir)).words).toEqual([
      "certificatesigningrequests.certificates.platform.io",
    ]);
    expect(readdirSync(cacheDir).some((f) => f.startsWith("resources-"))).toBe(true);
    expect(existsSync(`${file}.${process.pid}`)).toBe(false);
  });
});

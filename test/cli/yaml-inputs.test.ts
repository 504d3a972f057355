// YAML the CLIs read from files (controller config, dev PKI manifest, manifests, patches): aliases without anchors,
// cycles and merge keys give a one-line error and exit 1, as real processes.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../e2e/apiserver-process.js";
import { runCli } from "./fixtures.js";
import { PLATFORMCTL } from "../fixtures/repo.js";
import { tempDir } from "../fixtures/temp-dir.js";

beforeAll(() => ensureBuilt(), 240_000);

const CONFIG_HEADER = "apiVersion: platformcontrollermanager.config.platform.io/v1alpha1\nkind: PlatformControllerManagerConfiguration\n";

function platformctl(args: readonly string[], cwd: string) {
  const r = spawnSync(process.execPath, [PLATFORMCTL, ...args], { cwd, encoding: "utf8", timeout: 30_000, env: { ...process.env, PLATFORM_DEBUG: "" } });
  return { code: r.status, stderr: r.stderr };
}

describe("YAML files given to the command lines", () => {
  it.each([
    ["a controller config whose alias has no anchor", "cm.yaml", `${CONFIG_HEADER}Generic: *g\n`, ["controller", "--config"], /^error: invalid controller manager configuration .*cm\.yaml: Unresolved alias \(the anchor must be set before the alias\): g\n$/],
    ["a controller config that holds itself", "cm.yaml", "&d {kind: PlatformControllerManagerConfiguration, Generic: *d}\n", ["controller", "--config"], /^error: invalid controller manager configuration .*cm\.yaml: an alias refers to a node that contains it; a cycle has no plain value\n$/],
    ["a dev PKI manifest whose alias has no anchor", "pki.yaml", "version: 1\ncas: *x\n", ["dev-certs", "--manifest"], /^error: invalid dev PKI manifest .*pki\.yaml: Unresolved alias .*: x\n$/],
  ])("platform-ca refuses %s, saying it once, with exit code 1", async (_what, file, text, args, message) => {
    const dir = tempDir();
    writeFileSync(join(dir, file), text);
    const r = await runCli([...args, join(dir, file)], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
  });

  it("still lists several problems of a controller config one per line", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "cm.yaml"), `${CONFIG_HEADER}Generic:\n  Port: -1\nCSRSigningController:\n  ClusterSigningDuration: soon\n`);
    const r = await runCli(["controller", "--config", join(dir, "cm.yaml")], { cwd: dir });
    expect(r.code).toBe(1);
    const lines = r.stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^error: invalid controller manager configuration .*: 2 problems: /);
    expect(lines.slice(1).map((l) => /^ {2}expected `([^`]+)` /.exec(l)?.[1])).toEqual(["Generic.Port", "CSRSigningController.ClusterSigningDuration"]);
  });

  it.each([
    ["create -f, a List that holds itself", ["create", "-f", "list.yaml"], /^error: error parsing list\.yaml: an alias refers to a node that contains it; a cycle has no plain value\n$/],
    ["patch -p, a patch that holds itself", ["patch", "serviceaccount", "x", "--type", "json", "-p", "&a [*a]"], /^error: unable to parse the patch "&a \[\*a\]": an alias refers to a node that contains it/],
  ])("platformctl refuses %s before any request, with exit code 1", (_what, args, message) => {
    const dir = tempDir();
    writeFileSync(join(dir, "list.yaml"), "&l {apiVersion: v1, kind: List, items: [*l]}\n");
    // Nothing listens on port 1: the error must come from reading the input, not from the connection.
    const r = platformctl([...args, "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"], dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
  });
});

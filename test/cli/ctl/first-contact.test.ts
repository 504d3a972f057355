// platformctl's first contact: no client config says where to get one; kubectl's --kubeconfig and KUBECONFIG work too.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ADMIN_CONFIG_FILE } from "../../../src/apiserver/bootstrap/admin-config.js";
import { DEFAULT_DATA_DIR } from "../../../src/cli/commands/up.js";
import { UP_ADMIN_CONFIG } from "../../../src/cli/ctl/client-config.js";
import { CTL, runNode, useUpServer } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const ctx = useUpServer();

/** platformctl with no flags naming a config, in `cwd` with HOME `home` and exactly the environment given. */
const bare = (args: readonly string[], cwd: string, home: string, env: Record<string, string> = {}) =>
  runNode(CTL, args, { cwd, env: { HOME: home, KUBECONFIG: "", ...env } });

describe("platformctl without a client config", () => {
  it("names --platformconfig, PLATFORMCONFIG and the admin.conf `up` writes", async () => {
    const dir = tempDir();
    const r = await bare(["get", "csr"], dir, dir);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n").filter(Boolean)).toHaveLength(1);
    for (const way of ["--platformconfig FILE", "--kubeconfig FILE", "PLATFORMCONFIG", "KUBECONFIG", "`platform-ca up` writes one to DATA-DIR/admin.conf (.platform/admin.conf by default)"]) {
      expect(r.stderr).toContain(way);
    }
    expect(r.stderr).not.toContain("is here");
  });

  it("points at .platform/admin.conf when it is in the current directory", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, ".platform"));
    writeFileSync(join(dir, UP_ADMIN_CONFIG), "");
    const r = await bare(["get", "csr"], dir, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("; .platform/admin.conf is here: platformctl --platformconfig .platform/admin.conf get csr\n");
  });

  it("names the path up really writes", () => {
    expect(UP_ADMIN_CONFIG).toBe(join(DEFAULT_DATA_DIR, ADMIN_CONFIG_FILE));
  });
});

describe("kubectl's spellings", () => {
  it("accepts --kubeconfig as --platformconfig", async () => {
    const dir = tempDir();
    const r = await bare(["get", "namespaces", "-o", "name", "--kubeconfig", ctx.up.adminConf], dir, dir);
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("namespace/platform-system");
  });

  it("reads KUBECONFIG when PLATFORMCONFIG is unset and ~/.platform/config does not exist", async () => {
    const dir = tempDir();
    const r = await bare(["get", "namespaces", "-o", "name"], dir, dir, { KUBECONFIG: ctx.up.adminConf });
    expect(r.stderr).toBe("");
    expect(r.stdout).toContain("namespace/default");
  });

  it("keeps PLATFORMCONFIG and ~/.platform/config ahead of KUBECONFIG", async () => {
    const dir = tempDir();
    const broken = join(dir, "broken.conf");
    writeFileSync(broken, "apiVersion: v1\nkind: Config\nclusters: []\n");
    const alone = await bare(["get", "namespaces", "-o", "name"], dir, dir, { KUBECONFIG: broken });
    expect(alone.code).toBe(1);
    const viaEnv = await bare(["get", "namespaces", "-o", "name"], dir, dir, { KUBECONFIG: broken, PLATFORMCONFIG: ctx.up.adminConf });
    expect(viaEnv.stdout).toContain("namespace/default");
    mkdirSync(join(dir, ".platform"), { recursive: true });
    copyFileSync(ctx.up.adminConf, join(dir, ".platform", "config"));
    const viaHome = await bare(["get", "namespaces", "-o", "name"], dir, dir, { KUBECONFIG: broken });
    expect(viaHome.stdout).toContain("namespace/default");
  });
});

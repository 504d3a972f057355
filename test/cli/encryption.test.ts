// `--encryption-provider-config` on the built CLI: a bad file stops the start before anything is created, and the
// rotation procedure of docs/operations.md ("Encryption at rest") keeps every object readable.
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDataStore } from "../../src/apiserver/bootstrap/store.js";
import { loadEncryptionConfig } from "../../src/apiserver/encryption/config.js";
import type { EncryptedStorage } from "../../src/apiserver/encryption/encrypted-storage.js";
import { silentLogger } from "../../src/logger.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { KEY_A, KEY_B, encryptionYaml } from "../apiserver/encryption/fixtures.js";
import { CLI, runCli } from "./fixtures.js";
import { startProcess } from "../fixtures/process.js";

const dir = tempDir("pca-cli-encryption-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe("platform-ca --encryption-provider-config", () => {
  it.each([
    ["apiserver", "a key of the wrong length", encryptionYaml(["secrets"], [{ aescbc: { k1: Buffer.alloc(24).toString("base64") } }]),
      "invalid encryption configuration FILE: expected `resources[0].providers[0].aescbc.keys[0].secret` a key of 32 bytes for aescbc, got a key of 24 bytes"],
    ["up", "overlapping resources", encryptionYaml(["*.*", "secrets"], ["identity"]),
      'invalid encryption configuration FILE: expected `resources[0].resources[1]` not to overlap `resources[0].resources[0]` ("*.*") in the same list: the narrower entry would be masked, got "secrets"'],
    ["apiserver", "an unreadable path", undefined, "cannot read encryption configuration FILE: ENOENT"],
  ])("%s refuses %s with one line and creates no data directory", async (command, what, yaml, message) => {
    const config = yaml === undefined ? join(dir, "missing.yaml") : file(`${command}-${what.replace(/ /g, "-")}.yaml`, yaml);
    const dataDir = join(dir, `data-${command}-${what.replace(/ /g, "-")}`);
    const r = await runCli([command, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--encryption-provider-config", config]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split("\n")).toEqual([`error: ${message.replace("FILE", config)}`]);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("rotates a key as the operations guide says: new key second, then first, rewrite, then the old key removed", async () => {
    const dataDir = join(dir, "rotate");
    const logger = silentLogger();
    const open = async (config: string) => (await openDataStore(dataDir, await loadEncryptionConfig(config), logger)) as EncryptedStorage;
    const old = file("old.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
    const s = await open(old);
    for (let i = 0; i < 25; i++) await s.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await s.close();
    // 1. the new key second (every server can read it before any writes with it); 2. the new key first.
    file("step1.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A, key2: KEY_B } }]));
    const step2 = file("step2.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key2: KEY_B, key1: KEY_A } }]));
    // Removing the old key before the rewrite is refused at start, naming what still needs it.
    const early = file("early.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key2: KEY_B } }]));
    const refused = await runCli(["storage", "rewrite", "--data-dir", dataDir, "--encryption-provider-config", early]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim().split("\n").at(-1)).toBe(
      `error: encryption configuration ${early} cannot read 25 stored objects: 25 in /core/secrets (written by aesgcm/key1); add the missing provider or key (docs/operations.md "Encryption at rest")`,
    );
    // 3. rewrite every object with the first key (the server stopped).
    const r = await runCli(["storage", "rewrite", "--data-dir", dataDir, "--encryption-provider-config", step2]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("rewrote 25 objects\n");
    // 4. the old key removed: everything reads, nothing is stale.
    const after = await open(early);
    expect((await after.list("/core/secrets/")).items.map((kv) => JSON.parse(kv.value).i).sort((a, b) => a - b)).toEqual([...Array(25).keys()]);
    expect(after.staleReads()).toBe(0);
    await after.close();
  });

  it("follows the file with --encryption-provider-config-automatic-reload, which needs the file", async () => {
    const missing = await runCli(["apiserver", "--data-dir", join(dir, "reload-none"), "--listen", "127.0.0.1:0", "--encryption-provider-config-automatic-reload"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim()).toBe("error: --encryption-provider-config-automatic-reload needs --encryption-provider-config");
    const config = file("reload.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
    const dataDir = join(dir, "reload");
    const args = [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--encryption-provider-config", config, "--encryption-provider-config-automatic-reload"];
    const { proc, match: base } = await startProcess(process.execPath, args, /listening on (http:\/\/\S+)/);
    try {
      expect(await (await fetch(`${base}/readyz?verbose`)).text()).toContain("[+]kms-providers ok");
      writeFileSync(config, encryptionYaml(["secrets"], [{ aesgcm: { key2: KEY_B, key1: KEY_A } }]));
      await expect.poll(() => proc.stderr(), { timeout: 10_000 }).toContain('"msg":"encryption configuration reloaded"');
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toContain('apiserver_encryption_config_controller_automatic_reloads_total{status="success"} 1');
    } finally {
      expect(await proc.stop()).toBe(0);
    }
  });

  it("serves Secrets written through the API in plain form while the file holds only ciphertext", async () => {
    const dataDir = join(dir, "served");
    const config = file("served.yaml", encryptionYaml(["secrets"], [{ secretbox: { key1: KEY_A } }]));
    const { proc, match: base } = await startProcess(process.execPath, [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--encryption-provider-config", config], /listening on (http:\/\/\S+)/);
    try {
      const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: "db" }, stringData: { password: "SERVED-PLAINTEXT-MARKER" } };
      const created = await fetch(`${base}/api/v1/namespaces/default/secrets`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(secret) });
      expect(created.status).toBe(201);
      const read = (await (await fetch(`${base}/api/v1/namespaces/default/secrets/db`)).json()) as { data: Record<string, string> };
      expect(Buffer.from(read.data.password!, "base64").toString()).toBe("SERVED-PLAINTEXT-MARKER");
      const listed = (await (await fetch(`${base}/api/v1/namespaces/default/secrets`)).json()) as { items: Array<{ metadata: { name: string; resourceVersion: string } }> };
      expect(listed.items.map((i) => i.metadata.name)).toContain("db");
      expect(listed.items.every((i) => /^\d+$/.test(i.metadata.resourceVersion))).toBe(true);
      // Upstream's transformation metrics on the server's /metrics: the Secret sealed once (by its key and by its
      // provider), each at least once (the other Secrets the server writes at start are sealed too).
      const metrics = await (await fetch(`${base}/metrics`)).text();
      for (const prefix of ["key1:", "k8s:enc:secretbox:v1:"]) {
        expect(metrics).toMatch(new RegExp(`\\napiserver_storage_transformation_operations_total\\{transformation_type="to_storage",transformer_prefix="${prefix}",status="OK"\\} [1-9]\\d*\\n`));
      }
      expect(metrics).toContain("# TYPE apiserver_storage_transformation_duration_seconds histogram");
      // The store below: each flush of its log timed, each commit's writes counted, its size.
      expect(metrics).toMatch(/\nplatform_ca_storage_flush_duration_seconds_count\{file="log"\} [1-9]\d*\n/);
      expect(metrics).toMatch(/\nplatform_ca_storage_commit_writes_sum [1-9]\d*\n/);
      expect(metrics).toMatch(/\nplatform_ca_storage_size_bytes [1-9]\d*\n/);
    } finally {
      expect(await proc.stop()).toBe(0);
    }
    const marker = Buffer.from("SERVED-PLAINTEXT-MARKER").toString("base64");
    const files = readdirSync(dataDir).filter((f) => f.startsWith("store.db")).map((f) => readFileSync(join(dataDir, f)));
    expect(files.length).toBeGreaterThan(0);
    expect(files.some((bytes) => bytes.includes("SERVED-PLAINTEXT-MARKER") || bytes.includes(marker))).toBe(false);
    expect(files.some((bytes) => bytes.includes("k8s:enc:secretbox:v1:key1:"))).toBe(true);
  });
});

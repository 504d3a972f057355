// --encryption-provider-config-automatic-reload through the data store: a good edit is used for the next write, a bad
// one (unreadable, a key the store still needs missing, a KMS plugin that does not answer) keeps the running
// configuration and logs why, and upstream's reload metrics count both.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { loadEncryption, openDataStore } from "../../../src/apiserver/bootstrap/store.js";
import { isEncrypted, type EncryptedStorage, type ReloadStats } from "../../../src/apiserver/encryption/encrypted-storage.js";
import { ApiServerMetrics } from "../../../src/apiserver/metrics.js";
import { createLogger } from "../../../src/logger.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { KEY_A, KEY_B, encryptionYaml } from "./fixtures.js";

function lastPrefix(path: string, key: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const row = db.prepare<[string], { value: Buffer }>("SELECT value FROM log WHERE key = ? AND deleted = 0 ORDER BY rev DESC LIMIT 1").get(key)!;
    return row.value.subarray(0, 23).toString("latin1");
  } finally {
    db.close();
  }
}

/** A store on aesgcm/key1 that follows its file; `log()` is what it logged so far. */
async function reloading() {
  const dir = tempDir("pca-reload-");
  const file = join(dir, "encryption.yaml");
  writeFileSync(file, encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
  let text = "";
  const logger = createLogger({ level: "info", destination: new Writable({ write: (chunk, _e, done) => ((text += String(chunk)), done()) }) });
  const storage = await openDataStore(dir, await loadEncryption(file, undefined, logger), logger, { reload: {} });
  if (!isEncrypted(storage) || !storage.reloadStats) throw new Error("expected an encrypted store that reloads");
  return { dir, file, storage: storage as EncryptedStorage & { reloadStats(): ReloadStats }, log: () => text };
}

describe("automatic reload of the encryption configuration", () => {
  it("uses a good new file, keeps the running one on a bad file and says why, and counts both", async () => {
    const { dir, file, storage, log } = await reloading();
    const stats = storage.reloadStats;
    expect(storage.checks().map((c) => c.name)).toEqual(["kms-providers"]);
    const db = join(dir, "store.db");
    try {
      await storage.create("/core/secrets/default/a", "{}");

      // Bad: a 20-byte key. The running configuration stays.
      writeFileSync(file, encryptionYaml(["secrets"], [{ aesgcm: { key2: Buffer.alloc(20).toString("base64") } }]));
      await expect.poll(() => stats().failure, { timeout: 5000 }).toBe(1);
      expect(log()).toMatch(/"reason":"invalid encryption configuration .*encryption\.yaml: expected `resources\[0\]\.providers\[0\]\.aesgcm\.keys\[0\]\.secret` a key of 16, 24, 32 bytes for aesgcm, got a key of 20 bytes".*"msg":"encryption configuration not reloaded: the running configuration stays"/);
      await storage.create("/core/secrets/default/b", "{}");

      // Bad: valid, but without the key the stored secrets need.
      writeFileSync(file, encryptionYaml(["secrets"], [{ aesgcm: { key2: KEY_B } }]));
      await expect.poll(() => stats().failure, { timeout: 5000 }).toBe(2);
      expect(log()).toContain("cannot read 2 stored objects: 2 in /core/secrets (written by aesgcm/key1)");

      // Good: the new key first, the old one still reading.
      writeFileSync(file, encryptionYaml(["secrets"], [{ aesgcm: { key2: KEY_B, key1: KEY_A } }]));
      await expect.poll(() => stats().success, { timeout: 5000 }).toBe(1);
      await storage.create("/core/secrets/default/c", "{}");
      expect((await storage.list("/core/secrets/")).items.length).toBe(3);
      expect(storage.staleReads()).toBe(2);
      expect(log()).toContain('"msg":"encryption configuration reloaded"');
      expect(log()).not.toContain(KEY_A);

      const metrics = await new ApiServerMetrics({ encryptionReloads: stats }).registry.metrics();
      expect(metrics).toContain('apiserver_encryption_config_controller_automatic_reloads_total{status="success"} 1');
      expect(metrics).toContain('apiserver_encryption_config_controller_automatic_reloads_total{status="failure"} 2');
      expect(metrics).toMatch(/apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds\{status="success"\} \d{10}/);
    } finally {
      await storage.close();
    }
    // Written while the bad files were refused: the running key; after the good one: the new key.
    expect(lastPrefix(db, "/core/secrets/default/b")).toBe("k8s:enc:aesgcm:v1:key1:");
    expect(lastPrefix(db, "/core/secrets/default/c")).toBe("k8s:enc:aesgcm:v1:key2:");
  });

  it("refuses a new file whose KMS plugin does not answer", async () => {
    const { dir, file, storage, log } = await reloading();
    try {
      writeFileSync(file, encryptionYaml(["secrets"], [{ kms: { name: "gone", endpoint: `unix://${join(dir, "none.sock")}`, timeout: "200ms" } }, { aesgcm: { key1: KEY_A } }]));
      await expect.poll(() => storage.reloadStats().failure, { timeout: 5000 }).toBe(1);
      expect(log()).toMatch(/a KMS plugin of the new configuration does not answer: kmsv2 Provider gone is not healthy, error: the KMS plugin at unix:\/\/.*none\.sock did not answer Status/);
      expect(storage.config().kms).toEqual([]);
    } finally {
      await storage.close();
    }
  });
});

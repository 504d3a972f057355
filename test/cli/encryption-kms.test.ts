// KMS v2 on the built CLI, as docs/operations.md ("KMS v2") tells it: the test plugin started from a shell, a store
// moved from aesgcm to KMS by a rewrite, served (readiness, Secrets through the API), the plugin's key ID rotated and
// everything rewritten under it, the old provider removed; and a server whose plugin is down answers clear Statuses.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEncryption, openDataStore } from "../../src/apiserver/bootstrap/store.js";
import type { EncryptedStorage } from "../../src/apiserver/encryption/encrypted-storage.js";
import { silentLogger } from "../../src/logger.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { startProcess, type Proc } from "../fixtures/process.js";
import { KEY_A, encryptionYaml } from "../apiserver/encryption/fixtures.js";
import { CLI, REPO, runCli } from "./fixtures.js";

const dir = tempDir("pca-cli-kms-");
const socket = join(dir, "kms.sock");
const keyIdFile = join(dir, "kms-key-id");
const dataDir = join(dir, "data");
const write = (name: string, text: string): string => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const kms = { kms: { name: "kms1", endpoint: `unix://${socket}` } };
let plugin: Proc | undefined;
const startPlugin = async () => {
  ({ proc: plugin } = await startProcess(process.execPath, [join(REPO, "dist/test/fixtures/mock-kms-main.js"), socket, keyIdFile], /listening on/, { what: "mock KMS plugin" }));
};
beforeAll(async () => {
  writeFileSync(keyIdFile, "key-1\n");
  await startPlugin();
});
afterAll(async () => {
  await plugin?.stop();
});

/** Every stored value's bytes, from the store files of the stopped server. */
const storeBytes = (): Buffer => Buffer.concat(readdirSync(dataDir).filter((f) => f.startsWith("store.db")).map((f) => readFileSync(join(dataDir, f))));
/** The EncryptedObject field `keyID` as stored: tag 0x12, length, the ID. */
const storedKeyId = (id: string): Buffer => Buffer.concat([Buffer.of(0x12, id.length), Buffer.from(id)]);

const serve = (config: string) =>
  startProcess(process.execPath, [CLI, "apiserver", "--insecure-local", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--encryption-provider-config", config], /listening on (http:\/\/\S+)/);
const secret = (name: string) => ({ apiVersion: "v1", kind: "Secret", metadata: { name }, stringData: { password: "KMS-PLAINTEXT-MARKER" } });
const post = (base: string, name: string) => fetch(`${base}/api/v1/namespaces/default/secrets`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(secret(name)) });

describe("KMS v2 from the command line", () => {
  it("follows the operations guide: move to KMS, serve, rotate the key ID, rewrite, drop the old provider", async () => {
    const aesgcm = write("aesgcm.yaml", encryptionYaml(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
    const before = await openDataStore(dataDir, await loadEncryption(aesgcm, undefined, silentLogger()), silentLogger());
    for (let i = 0; i < 10; i++) await before.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await before.close();

    // 1. KMS first, the old provider second; rewrite.
    const both = write("kms-then-aesgcm.yaml", encryptionYaml(["secrets"], [kms, { aesgcm: { key1: KEY_A } }]));
    const moved = await runCli(["storage", "rewrite", "--data-dir", dataDir, "--encryption-provider-config", both]);
    expect(moved.stderr).not.toMatch(/"level":50/);
    expect(moved.stdout).toBe("rewrote 10 objects\n");
    expect(storeBytes().includes(storedKeyId("key-1"))).toBe(true);

    // 2. Served: ready with the plugin, Secrets in and out in plain form.
    const { proc, match: base } = await serve(both);
    try {
      const ready = await fetch(`${base}/readyz?verbose`);
      expect(await ready.text()).toContain("[+]kms-providers ok");
      expect((await post(base, "db")).status).toBe(201);
      const read = (await (await fetch(`${base}/api/v1/namespaces/default/secrets/db`)).json()) as { data: Record<string, string> };
      expect(Buffer.from(read.data.password!, "base64").toString()).toBe("KMS-PLAINTEXT-MARKER");
    } finally {
      expect(await proc.stop()).toBe(0);
    }
    expect(storeBytes().includes("KMS-PLAINTEXT-MARKER")).toBe(false);

    // 3. Rotate the plugin's key; rewrite (the rewrite asks the plugin's Status, so it writes under the new key ID).
    writeFileSync(keyIdFile, "key-2\n");
    const rotated = await runCli(["storage", "rewrite", "--data-dir", dataDir, "--encryption-provider-config", both]);
    // Every stored object is written again (the server's own objects too), not only the encrypted ones.
    expect(rotated.stdout).toMatch(/^rewrote (1[1-9]|[2-9]\d) objects\n$/);
    const bytes = storeBytes();
    expect(bytes.includes(storedKeyId("key-2"))).toBe(true);

    // 4. The old provider removed: everything reads, nothing is stale.
    const only = write("kms.yaml", encryptionYaml(["secrets"], [kms]));
    const after = (await openDataStore(dataDir, await loadEncryption(only, undefined, silentLogger()), silentLogger())) as EncryptedStorage;
    try {
      const items = (await after.list("/core/secrets/")).items;
      expect(items.length).toBe(11);
      expect(after.staleReads()).toBe(0);
    } finally {
      await after.close();
    }
  });

  it("answers writes and uncached reads with a clear Status, and fails readiness, while the plugin is down", async () => {
    await plugin!.stop();
    plugin = undefined;
    const only = write("kms-down.yaml", encryptionYaml(["secrets"], [kms]));
    const { proc, match: base } = await serve(only);
    try {
      expect(proc.stderr()).toContain("the KMS plugin did not answer at start; writes through this provider fail until it does");
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toContain("[-]kms-providers failed: reason withheld");
      const created = await post(base, "while-down");
      expect(created.status).toBe(500);
      const status = (await created.json()) as { reason: string; message: string };
      expect(status.reason).toBe("InternalError");
      expect(status.message).toMatch(/^Internal error occurred: cannot encrypt \/core\/secrets\/default\/while-down with KMS provider kms1: no data key yet: the KMS plugin has not answered since start; kmsv2 Provider kms1 is not healthy, error: the KMS plugin at unix:\/\/.*kms\.sock did not answer Status/);
      const read = await fetch(`${base}/api/v1/namespaces/default/secrets/db`);
      expect(read.status).toBe(503);
      expect(((await read.json()) as { message: string }).message).toMatch(/^cannot decrypt the stored value of \/core\/secrets\/default\/db: kms\/kms1: failed to decrypt DEK, error: the KMS plugin at unix:\/\/.* did not answer Decrypt/);
    } finally {
      expect(await proc.stop()).toBe(0);
    }
    await startPlugin();
  });
});

// The storage contract again, each backend under the encryption layer (every key matched by `*.*`), one provider each
// (KMS v2 through the test plugin on a unix socket), and SQLite as a server opens it without an encryption configuration
// (refusing encrypted values).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { openSqliteByteStorage, openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { refuseEncrypted } from "../../../src/apiserver/encryption/plain-guard.js";
import { encryptedStorage } from "../../../src/apiserver/encryption/encrypted-storage.js";
import { encryptionConfig, everythingWith } from "../encryption/fixtures.js";
import { MockKms } from "../../fixtures/mock-kms.js";
import { storageContract } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("pca-encrypted-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

storageContract("sqlite + aesgcm", async (options) => encryptedStorage(await openSqliteByteStorage({ path: join(dir, `${++n}`, "store.db"), ...options }), everythingWith("aesgcm")));
storageContract("memory + aescbc", async (options) => encryptedStorage(new MemoryStorage<Uint8Array>({ ...options, values: "bytes" }), everythingWith("aescbc")));
storageContract("memory + secretbox", async (options) => encryptedStorage(new MemoryStorage<Uint8Array>({ ...options, values: "bytes" }), everythingWith("secretbox")));
let kms: MockKms;
beforeAll(async () => {
  kms = await MockKms.start(join(dir, "kms.sock"));
});
afterAll(() => kms.stop());
// The plugin's provider keeps the system clock: the contract's fake clock jumps hours, past the seed's write deadline.
storageContract("sqlite + kms v2", async (options) => {
  const config = encryptionConfig(["*.*"], [{ kms: { name: "contract", endpoint: kms.endpoint } }]);
  await Promise.all(config.kms.map((t) => t.start()));
  return encryptedStorage(await openSqliteByteStorage({ path: join(dir, `${++n}`, "store.db"), ...options }), config);
});
storageContract("sqlite without encryption configuration", async (options) => refuseEncrypted(await openSqliteStorage({ path: join(dir, `${++n}`, "store.db"), ...options })));

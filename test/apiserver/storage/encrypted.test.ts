// The storage contract again, each backend under the encryption layer (every key matched by `*.*`), one provider each,
// and SQLite as a server opens it without an encryption configuration (refusing encrypted values).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll } from "vitest";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { openSqliteByteStorage, openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { refuseEncrypted } from "../../../src/apiserver/encryption/plain-guard.js";
import { encryptedStorage } from "../../../src/apiserver/encryption/encrypted-storage.js";
import { everythingWith } from "../encryption/fixtures.js";
import { storageContract } from "./contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir("pca-encrypted-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

storageContract("sqlite + aesgcm", async (options) => encryptedStorage(await openSqliteByteStorage({ path: join(dir, `${++n}`, "store.db"), ...options }), everythingWith("aesgcm")));
storageContract("memory + aescbc", async (options) => encryptedStorage(new MemoryStorage<Uint8Array>({ ...options, values: "bytes" }), everythingWith("aescbc")));
storageContract("memory + secretbox", async (options) => encryptedStorage(new MemoryStorage<Uint8Array>({ ...options, values: "bytes" }), everythingWith("secretbox")));
storageContract("sqlite without encryption configuration", async (options) => refuseEncrypted(await openSqliteStorage({ path: join(dir, `${++n}`, "store.db"), ...options })));

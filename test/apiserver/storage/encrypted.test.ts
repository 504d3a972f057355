// The storage contract again, each backend under the encryption layer (every key matched by `*.*`), one provider each.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll } from "vitest";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { openSqliteByteStorage } from "../../../src/apiserver/storage/sqlite.js";
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

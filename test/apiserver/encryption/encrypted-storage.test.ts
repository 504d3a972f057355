// Encryption at rest over SQLite: no plaintext in the file, upstream's formats (checked by Python's `cryptography` and
// NaCl's published secretbox vector), first provider writes and all read, stale reads, key rotation, refusals.
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it, vi } from "vitest";
import { encryptedStorage } from "../../../src/apiserver/encryption/encrypted-storage.js";
import { keyTransformer } from "../../../src/apiserver/encryption/providers.js";
import { rewriteAll } from "../../../src/apiserver/encryption/rewrite.js";
import { ApiServerMetrics, type ApiServerMetricsOptions } from "../../../src/apiserver/metrics.js";
import { openSqliteByteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { openDataStore } from "../../../src/apiserver/bootstrap/store.js";
import { silentLogger } from "../../../src/logger.js";
import type { EncryptionConfig } from "../../../src/apiserver/encryption/config.js";
import { recorder, rejection } from "../storage/contract.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { KEY_A, KEY_B, encryptionConfig, everythingWith } from "./fixtures.js";

const dir = tempDir("pca-encryption-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshPath = () => join(dir, `${++n}`, "store.db");
const open = async (path: string, config: EncryptionConfig) => encryptedStorage(await openSqliteByteStorage({ path }), config);

const SECRET_KEY = "/core/secrets/default/db-password";
const SECRET = JSON.stringify({ kind: "Secret", data: { password: "aHVudGVyMg==" }, marker: "PLAINTEXT-MARKER-4711" });

/** Every stored value of a key, raw, from the closed database file. */
function rawValues(path: string, key: string): Buffer[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare<[string], { value: Buffer }>("SELECT value FROM log WHERE key = ? AND deleted = 0 ORDER BY rev").all(key).map((r) => r.value);
  } finally {
    db.close();
  }
}

/** Decrypts with Python's `cryptography` (an implementation independent of node:crypto). */
function pythonDecrypt(mode: "cbc" | "gcm", key: Buffer, body: Buffer, aad: string): string {
  const script = `
import sys, base64
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import padding
key, body, aad = base64.b64decode(sys.argv[1]), base64.b64decode(sys.argv[2]), sys.argv[3].encode()
if sys.argv[4] == "gcm":
    out = AESGCM(key).decrypt(body[:12], body[12:], aad)
else:
    d = Cipher(algorithms.AES(key), modes.CBC(body[:16])).decryptor()
    padded = d.update(body[16:]) + d.finalize()
    u = padding.PKCS7(128).unpadder()
    out = u.update(padded) + u.finalize()
sys.stdout.write(out.decode())
`;
  // stderr is kept: a refused tag is an expected outcome whose traceback belongs in the thrown error, not the test log.
  return execFileSync("/usr/bin/python3", ["-c", script, key.toString("base64"), body.toString("base64"), aad, mode], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("encryption at rest", () => {
  it.each(["aesgcm", "aescbc", "secretbox"] as const)("leaves no plaintext of an encrypted resource in the database file or its log (%s)", async (type) => {
    const path = freshPath();
    const s = await open(path, encryptionConfig(["secrets"], [{ [type]: { key1: KEY_A } }]));
    await s.create(SECRET_KEY, SECRET);
    await s.update(SECRET_KEY, SECRET.replace("4711", "4712"));
    await s.create("/core/configmaps/default/plain", JSON.stringify({ marker: "VISIBLE-CONFIGMAP" }));
    expect((await s.get(SECRET_KEY))?.value).toBe(SECRET.replace("4711", "4712"));
    await s.close();
    const files = readdirSync(join(path, "..")).map((f) => readFileSync(join(path, "..", f)));
    expect(files.some((bytes) => bytes.includes("PLAINTEXT-MARKER"))).toBe(false);
    expect(files.some((bytes) => bytes.includes("VISIBLE-CONFIGMAP"))).toBe(true);
    const prefix = `k8s:enc:${type}:v1:key1:`;
    expect(rawValues(path, SECRET_KEY).map((raw) => raw.subarray(0, prefix.length).toString("latin1"))).toEqual([prefix, prefix]);
  });

  it("writes aesgcm as upstream: prefix, nonce(12), ciphertext, tag, the storage key as additional data (Python decrypts it)", async () => {
    const path = freshPath();
    const s = await open(path, encryptionConfig(["secrets"], [{ aesgcm: { key1: KEY_A } }]));
    await s.create(SECRET_KEY, SECRET);
    await s.close();
    const [raw] = rawValues(path, SECRET_KEY);
    const prefix = "k8s:enc:aesgcm:v1:key1:";
    expect(raw!.subarray(0, prefix.length).toString("latin1")).toBe(prefix);
    expect(raw!.length).toBe(prefix.length + 12 + Buffer.byteLength(SECRET) + 16);
    expect(pythonDecrypt("gcm", Buffer.from(KEY_A, "base64"), raw!.subarray(prefix.length), SECRET_KEY)).toBe(SECRET);
    // Moved to another key, the value no longer authenticates: the key is bound in.
    expect(() => pythonDecrypt("gcm", Buffer.from(KEY_A, "base64"), raw!.subarray(prefix.length), "/core/secrets/default/other")).toThrow(/InvalidTag/);
  });

  it("writes aescbc as upstream: prefix, IV(16), AES-256-CBC with PKCS#7 (Python decrypts it)", async () => {
    const path = freshPath();
    const s = await open(path, encryptionConfig(["secrets"], [{ aescbc: { key1: KEY_A } }]));
    await s.create(SECRET_KEY, SECRET);
    await s.close();
    const [raw] = rawValues(path, SECRET_KEY);
    const prefix = "k8s:enc:aescbc:v1:key1:";
    expect(raw!.subarray(0, prefix.length).toString("latin1")).toBe(prefix);
    expect((raw!.length - prefix.length) % 16).toBe(0);
    expect(pythonDecrypt("cbc", Buffer.from(KEY_A, "base64"), raw!.subarray(prefix.length), "")).toBe(SECRET);
  });

  it("reads secretbox as nonce(24)‖tag‖ciphertext: NaCl's published crypto_secretbox vector opens", () => {
    const key = Buffer.from("1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389", "hex");
    const nonce = Buffer.from("69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37", "hex");
    const plain = Buffer.from(
      "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705",
      "hex",
    );
    const box = Buffer.from(
      "f3ffc7703f9400e52a7dfb4b3d3305d98e993b9f48681273c29650ba32fc76ce48332ea7164d96a4476fb8c531a1186ac0dfc17c98dce87b4da7f011ec48c97271d2c20f9b928fe2270d6fb863d51738b48eeee314a7cc8ab932164548e526ae90224368517acfeabd6bb3732bc0e9da99832b61ca01b6de56244a9e88d5f9b37973f622a43d14a6599b1f654cb45a74e355a5",
      "hex",
    );
    const t = keyTransformer("secretbox", "k", key);
    expect(t.open(Buffer.concat([nonce, box]), "/any").equals(plain)).toBe(true);
    const sealed = t.seal(plain, "/any");
    expect(sealed.length).toBe(24 + 16 + plain.length);
    expect(t.open(sealed, "/any").equals(plain)).toBe(true);
  });

  it("reads with every provider, counts reads by a non-first one as stale, and the rewrite re-encrypts with the first", async () => {
    const path = freshPath();
    const before = await open(path, everythingWith("aesgcm"));
    for (let i = 0; i < 30; i++) await before.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await before.close();
    // Rotation step 1–2: the new key first, the old one still listed for reads.
    const rotated = await open(path, encryptionConfig(["*.*"], [{ aesgcm: { key2: KEY_B, key1: KEY_A } }]));
    expect((await rotated.list("/core/secrets/")).items.map((kv) => JSON.parse(kv.value).i)).toEqual([...Array(30).keys()].sort((a, b) => (`s${a}` < `s${b}` ? -1 : 1)));
    expect(rotated.staleReads()).toBe(30);
    const metrics = new ApiServerMetrics({ staleReads: rotated.staleReads });
    expect(await metrics.registry.metrics()).toContain("\nplatform_ca_storage_stale_reads_total 30\n");
    // Step 3: rewrite everything.
    expect(await rewriteAll(rotated)).toEqual({ rewritten: 30, skipped: 0 });
    const stale = rotated.staleReads();
    await rotated.list("/");
    expect(rotated.staleReads()).toBe(stale);
    await rotated.close();
    // Step 4: the old key removed; every object still reads.
    const after = await open(path, encryptionConfig(["*.*"], [{ aesgcm: { key2: KEY_B } }]));
    const items = (await after.list("/")).items;
    expect(items.length).toBe(30);
    expect(items.every((kv) => JSON.parse(kv.value).i >= 0)).toBe(true);
    await after.close();
    expect(rawValues(path, "/core/secrets/default/s0").at(-1)!.subarray(0, 23).toString("latin1")).toBe("k8s:enc:aesgcm:v1:key2:");
  });

  it("keeps an Event's time to live through the rewrite, and a Secret without one", async () => {
    const clock = new FakeClock();
    const s = encryptedStorage(await openSqliteByteStorage({ path: freshPath(), clock }), everythingWith("aesgcm"));
    await s.create("/events.platform.io/events/default/e", JSON.stringify({ reason: "Issued" }), 3600);
    await s.create(SECRET_KEY, SECRET);
    await clock.advance(30 * 60_000);
    expect(await rewriteAll(s)).toEqual({ rewritten: 2, skipped: 0 });
    await clock.advance(30 * 60_000 + 1000);
    expect((await s.list("/")).items.map((kv) => kv.key)).toEqual([SECRET_KEY]);
    await s.close();
  });

  it("answers a clear error, never ciphertext, when the key or the provider is missing", async () => {
    const path = freshPath();
    const s = await open(path, everythingWith("aescbc"));
    await s.create(SECRET_KEY, SECRET);
    await s.close();
    const wrongKey = await open(path, encryptionConfig(["*.*"], [{ aescbc: { key2: KEY_B } }]));
    const err = await rejection(wrongKey.get(SECRET_KEY), "STORAGE_UNAVAILABLE");
    expect(err.message).toBe(`cannot decrypt the stored value of ${SECRET_KEY}: no configured provider matches its prefix (is a provider or key missing from the encryption configuration?)`);
    // A watch replaying that write ends with the same error rather than skipping the event.
    const w = recorder(wrongKey, "/core/", 1);
    expect((await w.failed).message).toBe(err.message);
    expect(w.events).toEqual([]);
    await wrongKey.close();
    const sameNameOtherSecret = await open(path, encryptionConfig(["*.*"], [{ aescbc: { key1: KEY_B } }]));
    expect((await rejection(sameNameOtherSecret.list("/"), "STORAGE_UNAVAILABLE")).message).toMatch(/^cannot decrypt the stored value of \/core\/secrets\/default\/db-password: aescbc\/key1: /);
    await sameNameOtherSecret.close();
    const identityOnly = await open(path, encryptionConfig(["*.*"], ["identity"]));
    expect((await rejection(identityOnly.get(SECRET_KEY), "STORAGE_UNAVAILABLE")).message).toBe(
      `cannot decrypt the stored value of ${SECRET_KEY}: identity: identity transformer tried to read encrypted data`,
    );
    await identityOnly.close();
    // Started without the configuration, the store refuses the encrypted value as identity does (never ciphertext as data).
    const plain = await openDataStore(join(path, ".."), undefined, silentLogger());
    expect((await rejection(plain.list("/"), "STORAGE_UNAVAILABLE")).message).toBe(
      `cannot decrypt the stored value of ${SECRET_KEY}: identity: the value is encrypted and no --encryption-provider-config is given`,
    );
    await plain.close();
  });

  it("decrypts a value once for its revision: reads and watch events of what it wrote or read are not decrypted again", async () => {
    const path = freshPath();
    const config = everythingWith("aesgcm");
    const key1 = config.rules[0]!.transformers[0]!;
    const opens = vi.spyOn(key1, "open");
    const inner = await openSqliteByteStorage({ path });
    const s = encryptedStorage(inner, config);
    for (let i = 0; i < 5; i++) await s.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    const w = recorder(s, "/core/secrets/", await s.revision());
    await s.update("/core/secrets/default/s0", JSON.stringify({ i: 0, v: 2 }));
    expect((await w.until(1))[0]!.kv.value).toBe(JSON.stringify({ i: 0, v: 2 }));
    for (let r = 0; r < 3; r++) expect((await s.list("/core/secrets/")).items.map((kv) => JSON.parse(kv.value).i)).toEqual([0, 1, 2, 3, 4]);
    expect((await s.get("/core/secrets/default/s1"))?.value).toBe(JSON.stringify({ i: 1 }));
    expect(opens).not.toHaveBeenCalled();
    // Another server's write (the same store through etcd): a new revision, decrypted once, then served as read.
    const sealed = Buffer.concat([key1.prefix, key1.seal(Buffer.from(JSON.stringify({ i: 1, by: "other" })), "/core/secrets/default/s1")]);
    await inner.update("/core/secrets/default/s1", sealed);
    for (let r = 0; r < 3; r++) expect(JSON.parse((await s.get("/core/secrets/default/s1"))!.value)).toEqual({ i: 1, by: "other" });
    expect(opens).toHaveBeenCalledTimes(1);
    // Deleted and created again: the new value, never the old one's text.
    await s.delete("/core/secrets/default/s2");
    await inner.create("/core/secrets/default/s2", Buffer.concat([key1.prefix, key1.seal(Buffer.from('{"i":2,"again":true}'), "/core/secrets/default/s2")]));
    expect((await s.get("/core/secrets/default/s2"))?.value).toBe('{"i":2,"again":true}');
    w.watch.cancel();
    await s.close();
    // After a restart every value is decrypted at its first read, and only then.
    opens.mockClear();
    const reopened = encryptedStorage(await openSqliteByteStorage({ path }), config);
    for (let r = 0; r < 3; r++) expect((await reopened.list("/core/secrets/")).items.length).toBe(5);
    expect(opens).toHaveBeenCalledTimes(5);
    await reopened.close();
  });

  it("decrypts a value read through a provider other than the first at every read, so each read counts as stale", async () => {
    const path = freshPath();
    const s = await open(path, everythingWith("aesgcm"));
    for (let i = 0; i < 4; i++) await s.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await s.close();
    const rotated = await open(path, encryptionConfig(["*.*"], [{ aesgcm: { key2: KEY_B, key1: KEY_A } }]));
    for (let r = 0; r < 3; r++) await rotated.list("/core/secrets/");
    expect(rotated.staleReads()).toBe(12);
    await rotated.close();
  });

  it("counts what it seals and opens as upstream's transformation metrics: direction, key and provider prefix, outcome", async () => {
    const path = freshPath();
    const secretsOnly = (keys: Record<string, string>) => encryptionConfig(["secrets"], [{ aesgcm: keys }]);
    const text = (s: { transformations: ApiServerMetricsOptions["transformations"] }) => new ApiServerMetrics({ transformations: s.transformations }).registry.metrics();
    const ops = (type: string, prefix: string, status: string, n: number) =>
      `apiserver_storage_transformation_operations_total{transformation_type="${type}",transformer_prefix="${prefix}",status="${status}"} ${n}\n`;
    const s = await open(path, secretsOnly({ key1: KEY_A }));
    for (let i = 0; i < 3; i++) await s.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await s.create("/core/configmaps/default/plain", "{}");
    for (let r = 0; r < 2; r++) await s.list("/core/");
    const written = await text(s);
    // Sealed three times, counted under the key and under the provider as upstream's nested transformers count; the
    // ConfigMap, which no rule names, not at all; nothing opened (the texts written are kept).
    expect(written).toContain(ops("to_storage", "key1:", "OK", 3));
    expect(written).toContain(ops("to_storage", "k8s:enc:aesgcm:v1:", "OK", 3));
    expect(written).not.toContain('transformation_type="from_storage"');
    expect(written).not.toMatch(/transformer_prefix="(identity)?"/);
    await s.close();

    const reopened = await open(path, secretsOnly({ key1: KEY_A }));
    for (let r = 0; r < 2; r++) expect((await reopened.list("/core/secrets/")).items).toHaveLength(3);
    const read = await text(reopened);
    expect(read).toContain(ops("from_storage", "key1:", "OK", 3));
    expect(read).toContain(ops("from_storage", "k8s:enc:aesgcm:v1:", "OK", 3));
    expect(read).toContain('apiserver_storage_transformation_duration_seconds_count{transformation_type="from_storage",transformer_prefix="key1:"} 3\n');
    expect(read).toMatch(/apiserver_storage_transformation_duration_seconds_bucket\{le="0\.000005",transformation_type="from_storage",transformer_prefix="key1:"\} \d/);
    await reopened.close();

    // The key gone from the file: no provider reads it (upstream's `unknown`, and its provider's prefix); a listed key
    // whose secret changed: that key and its provider fail.
    const keyGone = await open(path, secretsOnly({ key2: KEY_B }));
    await rejection(keyGone.get("/core/secrets/default/s0"), "STORAGE_UNAVAILABLE");
    const gone = await text(keyGone);
    expect(gone).toContain(ops("from_storage", "unknown", "unknown-non-grpc", 1));
    expect(gone).toContain(ops("from_storage", "k8s:enc:aesgcm:v1:", "unknown-non-grpc", 1));
    expect(gone).not.toContain("transformation_duration_seconds_count{transformation_type=\"from_storage\"");
    await keyGone.close();
    const otherSecret = await open(path, secretsOnly({ key1: KEY_B }));
    await rejection(otherSecret.get("/core/secrets/default/s0"), "STORAGE_UNAVAILABLE");
    const refused = await text(otherSecret);
    expect(refused).toContain(ops("from_storage", "key1:", "unknown-non-grpc", 1));
    expect(refused).toContain(ops("from_storage", "k8s:enc:aesgcm:v1:", "unknown-non-grpc", 1));
    expect(refused).not.toContain('transformer_prefix="unknown"');
    await otherSecret.close();
  });

  it("decrypts with identity first (moving away from encryption) and writes plain text from then on", async () => {
    const path = freshPath();
    const s = await open(path, everythingWith("secretbox"));
    await s.create(SECRET_KEY, SECRET);
    await s.close();
    const leaving = await open(path, encryptionConfig(["*.*"], ["identity", { secretbox: { key1: KEY_A } }]));
    expect((await leaving.get(SECRET_KEY))?.value).toBe(SECRET);
    expect(leaving.staleReads()).toBe(1);
    await rewriteAll(leaving);
    await leaving.close();
    expect(rawValues(path, SECRET_KEY).at(-1)!.toString("utf8")).toBe(SECRET);
  });
});

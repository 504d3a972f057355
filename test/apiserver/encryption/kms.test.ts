// KMS v2 encryption at rest against the test plugin over a unix socket: upstream's stored format (decoded by protobufjs
// and decrypted by Python's `cryptography`), seed caching while the plugin is down, the write deadline, key ID rotation
// with stale reads and rewrite, v1 refused.
import { execFileSync } from "node:child_process";
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkProvidersCoverStore, encryptedStorage } from "../../../src/apiserver/encryption/encrypted-storage.js";
import { KMS_WRITE_TTL_MS } from "../../../src/apiserver/encryption/kms-provider.js";
import { KmsClient } from "../../../src/apiserver/encryption/kms-client.js";
import { ApiServerMetrics } from "../../../src/apiserver/metrics.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { rewriteAll } from "../../../src/apiserver/encryption/rewrite.js";
import { openSqliteByteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { parseEncryptionConfig, type EncryptionConfig } from "../../../src/apiserver/encryption/config.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { recorder, rejection } from "../storage/contract.js";
import { MOCK_ANNOTATION, MockKms } from "../../fixtures/mock-kms.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { KEY_A, encryptionConfig } from "./fixtures.js";

const dir = tempDir("pca-kms-");
let n = 0;
const freshPath = () => join(dir, `${++n}`, "store.db");
let kms: MockKms;
beforeAll(async () => {
  kms = await MockKms.start(join(dir, "kms.sock"));
});
afterAll(() => kms.stop());

const kmsConfig = (clock?: FakeClock): EncryptionConfig =>
  encryptionConfig(["secrets"], [{ kms: { name: "kms1", endpoint: kms.endpoint } }], clock ? { clock } : {});

async function open(path: string, config: EncryptionConfig) {
  for (const t of config.kms) expect(await t.start()).toBeUndefined();
  return encryptedStorage(await openSqliteByteStorage({ path }), config);
}

const SECRET_KEY = "/core/secrets/default/db-password";
const SECRET = JSON.stringify({ kind: "Secret", data: { password: "aHVudGVyMg==" }, marker: "PLAINTEXT-MARKER-4711" });
const PREFIX = "k8s:enc:kms:v2:kms1:";

function rawValue(path: string, key: string): Buffer {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare<[string], { value: Buffer }>("SELECT value FROM log WHERE key = ? AND deleted = 0 ORDER BY rev DESC LIMIT 1").get(key)!.value;
  } finally {
    db.close();
  }
}

interface Decoded {
  encryptedData: Buffer;
  keyID: string;
  encryptedDEKSource: Buffer;
  annotations: Record<string, Buffer>;
  encryptedDEKSourceType: number;
}

// Upstream's kmsv2/v2/api.proto EncryptedObject, read by protobufjs (not this product's decoder).
const EncryptedObject = protobuf.Root.fromJSON({
  nested: {
    EncryptedObject: {
      fields: {
        encryptedData: { type: "bytes", id: 1 },
        keyID: { type: "string", id: 2 },
        encryptedDEKSource: { type: "bytes", id: 3 },
        annotations: { keyType: "string", type: "bytes", id: 4 } as never,
        encryptedDEKSourceType: { type: "int32", id: 5 },
      },
    },
  },
}).lookupType("EncryptedObject");

describe("KMS v2 provider", () => {
  it("stores upstream's EncryptedObject: a wrapped seed, per-write HKDF-SHA256 key, AES-GCM bound to the storage key", async () => {
    const path = freshPath();
    const s = await open(path, kmsConfig());
    await s.create(SECRET_KEY, SECRET);
    await s.create("/core/configmaps/default/plain", JSON.stringify({ marker: "VISIBLE-CONFIGMAP" }));
    expect((await s.get(SECRET_KEY))?.value).toBe(SECRET);
    await s.close();
    const files = readdirSync(join(path, "..")).map((f) => readFileSync(join(path, "..", f)));
    expect(files.some((bytes) => bytes.includes("PLAINTEXT-MARKER"))).toBe(false);
    expect(files.some((bytes) => bytes.includes("VISIBLE-CONFIGMAP"))).toBe(true);
    const raw = rawValue(path, SECRET_KEY);
    expect(raw.subarray(0, PREFIX.length).toString("latin1")).toBe(PREFIX);
    const o = EncryptedObject.toObject(EncryptedObject.decode(raw.subarray(PREFIX.length))) as unknown as Decoded;
    expect(o.keyID).toBe("key-1");
    expect(o.encryptedDEKSourceType).toBe(1); // HKDF_SHA256_XNONCE_AES_GCM_SEED
    expect(Object.keys(o.annotations)).toEqual([MOCK_ANNOTATION]);
    // Unwrap the seed as the plugin does, then derive and decrypt in Python.
    const wrapped = o.encryptedDEKSource;
    const kek = createHash("sha256").update("mock-kms\0key-1").digest();
    const d = createDecipheriv("aes-256-gcm", kek, wrapped.subarray(0, 12));
    d.setAuthTag(wrapped.subarray(wrapped.length - 16));
    const seed = Buffer.concat([d.update(wrapped.subarray(12, wrapped.length - 16)), d.final()]);
    expect(seed.length).toBe(32);
    const script = `
import sys, base64
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
seed, data, aad = base64.b64decode(sys.argv[1]), base64.b64decode(sys.argv[2]), sys.argv[3].encode()
key = HKDFExpand(hashes.SHA256(), 32, data[:32]).derive(seed)
sys.stdout.write(AESGCM(key).decrypt(data[32:44], data[44:], aad).decode())
`;
    const data = o.encryptedData.toString("base64");
    expect(execFileSync("/usr/bin/python3", ["-c", script, seed.toString("base64"), data, SECRET_KEY], { encoding: "utf8" })).toBe(SECRET);
  });

  it("keeps reading values whose seed it unwrapped while the plugin is down; writes fail with a 500 after 3 minutes", async () => {
    const clock = new FakeClock(Date.now());
    const path = freshPath();
    const s = await open(path, kmsConfig(clock));
    await s.create(SECRET_KEY, SECRET);
    const decrypts = kms.calls.decrypt;
    await kms.down();
    try {
      expect((await s.get(SECRET_KEY))?.value).toBe(SECRET);
      // Within the coasting time, writes go on with the current seed.
      await s.create("/core/secrets/default/during", JSON.stringify({ n: 1 }));
      await clock.advance(KMS_WRITE_TTL_MS + 1000);
      const err = await rejection(s.create("/core/secrets/default/late", "{}"), "INTERNAL");
      expect(err.message).toMatch(/^Internal error occurred: cannot encrypt \/core\/secrets\/default\/late with KMS provider kms1: encryptedDEKSource with keyID hash "sha256:[0-9a-f]{64}" expired at .* \(current time is .*\); kmsv2 Provider kms1 is not healthy, error: the KMS plugin at unix:\/\/.* did not answer Status/);
      expect((err as { httpStatus?: number }).httpStatus).toBe(500);
      expect((await s.list("/core/secrets/")).items.length).toBe(2);
      expect(kms.calls.decrypt).toBe(decrypts);
    } finally {
      await kms.up();
    }
    // Back up: the next status poll extends the seed, writes work again.
    const wrote = async () => {
      await clock.advance(10_000);
      return s.create("/core/secrets/default/after", "{}").then(() => true, () => false);
    };
    await expect.poll(wrote, { timeout: 5000, interval: 200 }).toBe(true);
    await s.close();
  });

  it("reads through the plugin when the seed is not cached, one Decrypt per seed, and fails clearly while it is down", async () => {
    const path = freshPath();
    const writer = await open(path, kmsConfig());
    for (let i = 0; i < 20; i++) await writer.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    await writer.close();
    await kms.down();
    const down = kmsConfig();
    const cold = encryptedStorage(await openSqliteByteStorage({ path }), down);
    const err = await rejection(cold.get("/core/secrets/default/s0"), "STORAGE_UNAVAILABLE");
    expect(err.message).toMatch(/^cannot decrypt the stored value of \/core\/secrets\/default\/s0: kms\/kms1: failed to decrypt DEK, error: the KMS plugin at unix:\/\/.* did not answer Decrypt/);
    // A watch replaying those writes ends with the error, delivering nothing out of order or half.
    const failing = recorder(cold, "/core/secrets/", 1);
    expect((await failing.failed).message).toMatch(/^cannot decrypt the stored value of \/core\/secrets\/default\/s0: kms\/kms1: failed to decrypt DEK/);
    expect(failing.events).toEqual([]);
    // Upstream's transformation metrics: each failed read under the plugin's prefix with the gRPC code it failed with.
    const failed = await new ApiServerMetrics({ transformations: cold.transformations }).registry.metrics();
    expect(failed).toMatch(/\napiserver_storage_transformation_operations_total\{transformation_type="from_storage",transformer_prefix="k8s:enc:kms:v2:kms1:",status="Unavailable"\} [12]\n/);
    expect(failed).not.toContain('status="OK"');
    expect(failed).toMatch(/\napiserver_envelope_encryption_kms_operations_latency_seconds_count\{provider_name="kms1",method_name="\/v2\.KeyManagementService\/Decrypt",grpc_status_code="Unavailable"\} [1-9]/);
    await cold.close();
    await kms.up();
    const before = kms.calls.decrypt;
    const reader = await open(path, kmsConfig());
    // A watch replaying history waits for the unwrap and keeps revision order.
    const w = recorder(reader, "/core/secrets/", 1);
    expect((await w.until(20)).map((e) => JSON.parse(e.kv.value).i)).toEqual([...Array(20).keys()]);
    w.watch.cancel();
    expect((await reader.list("/core/secrets/")).items.length).toBe(20);
    expect(kms.calls.decrypt - before).toBe(1);
    // Twenty values opened once each (the list is served from what the replay decrypted).
    const served = await new ApiServerMetrics({ transformations: reader.transformations }).registry.metrics();
    expect(served).toContain('\napiserver_storage_transformation_operations_total{transformation_type="from_storage",transformer_prefix="k8s:enc:kms:v2:kms1:",status="OK"} 20\n');
    // Its own seed and the one it unwrapped for the twenty values.
    expect(served).toContain('\napiserver_envelope_encryption_dek_source_cache_size{provider_name="kms1"} 2\n');
    await reader.close();
  });

  it("a key ID change gets a new seed, old values read as stale, and the rewrite moves them to the new key ID", async () => {
    const path = freshPath();
    const s = await open(path, kmsConfig());
    for (let i = 0; i < 10; i++) await s.create(`/core/secrets/default/s${i}`, JSON.stringify({ i }));
    const t = s.config().kms[0]!;
    const encrypts = kms.calls.encrypt;
    kms.keyId = "key-2";
    try {
      await t.refresh();
      expect(kms.calls.encrypt).toBe(encrypts + 1);
      expect((await s.list("/core/secrets/")).items.length).toBe(10);
      expect(s.staleReads()).toBe(10);
      expect(await rewriteAll(s)).toEqual({ rewritten: 10, skipped: 0 });
      const stale = s.staleReads();
      await s.list("/core/secrets/");
      expect(s.staleReads()).toBe(stale);
      // Upstream's KMS metrics (one set per process, so other tests' counts are in them too): both key IDs by hash,
      // never as themselves; the last Status answer; each Encrypt call timed; a Status answer without a key ID refused.
      const [hash1, hash2] = ["key-1", "key-2"].map((id) => `sha256:${createHash("sha256").update(id).digest("hex")}`);
      kms.keyId = "";
      await expect(t.refresh()).rejects.toThrow(/got invalid KMSv2 KeyID hash "": the key ID is 0 bytes/);
      const text = await new ApiServerMetrics({ transformations: s.transformations }).registry.metrics();
      const series = (name: string, labels: string) => new RegExp(`\\n${name}\\{${labels}\\} ([0-9.e+]+)\\n`).exec(text)?.[1];
      expect(Number(series("apiserver_envelope_encryption_key_id_hash_total", `transformation_type="to_storage",provider_name="kms1",key_id_hash="${hash2}"`))).toBeGreaterThanOrEqual(10);
      expect(Number(series("apiserver_envelope_encryption_key_id_hash_total", `transformation_type="from_storage",provider_name="kms1",key_id_hash="${hash1}"`))).toBeGreaterThanOrEqual(10);
      const lastUse = Number(series("apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds", `transformation_type="to_storage",provider_name="kms1",key_id_hash="${hash2}"`));
      expect(Math.abs(lastUse - Date.now() / 1000)).toBeLessThan(60);
      expect(Number(series("apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds", `provider_name="kms1",key_id_hash="${hash2}"`))).toBeGreaterThan(0);
      expect(Number(series("apiserver_envelope_encryption_invalid_key_id_from_status_total", `provider_name="kms1",error="empty"`))).toBeGreaterThanOrEqual(1);
      expect(Number(series("apiserver_envelope_encryption_kms_operations_latency_seconds_count", `provider_name="kms1",method_name="/v2.KeyManagementService/Encrypt",grpc_status_code="OK"`))).toBeGreaterThanOrEqual(2);
      expect(text).not.toMatch(/key_id_hash="key-[12]"/);
      await s.close();
      const o = EncryptedObject.toObject(EncryptedObject.decode(rawValue(path, "/core/secrets/default/s3").subarray(PREFIX.length))) as unknown as Decoded;
      expect(o.keyID).toBe("key-2");
    } finally {
      kms.keyId = "key-1";
    }
  });

  it("reads a value protobufjs encoded in upstream's earlier scheme (one AES-GCM data key, AES_GCM_KEY) and counts it stale", async () => {
    const dek = randomBytes(32);
    const client = new KmsClient(kms.endpoint, 3000);
    const wrapped = await client.encrypt("test", dek);
    client.close();
    const nonce = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", dek, nonce);
    c.setAAD(Buffer.from(SECRET_KEY));
    const encryptedData = Buffer.concat([nonce, c.update(SECRET), c.final(), c.getAuthTag()]);
    const body = EncryptedObject.encode({ encryptedData, keyID: wrapped.key_id, encryptedDEKSource: wrapped.ciphertext, annotations: wrapped.annotations, encryptedDEKSourceType: 0 }).finish();
    const bytes = new MemoryStorage<Uint8Array>({ values: "bytes" });
    await bytes.create(SECRET_KEY, Buffer.concat([Buffer.from(PREFIX), body]));
    const config = kmsConfig();
    for (const t of config.kms) await t.start();
    const s = encryptedStorage(bytes, config);
    expect((await s.get(SECRET_KEY))?.value).toBe(SECRET);
    expect(s.staleReads()).toBe(1);
    await s.close();
  });

  it("stops the start when the KMS provider is missing from the file, naming who wrote the values", async () => {
    const path = freshPath();
    const s = await open(path, kmsConfig());
    await s.create(SECRET_KEY, SECRET);
    await s.close();
    const bytes = await openSqliteByteStorage({ path });
    try {
      const err = await rejection(checkProvidersCoverStore(bytes, encryptionConfig(["secrets"], [{ aesgcm: { key1: KEY_A } }])), "CONFIG_INVALID");
      expect(err.message).toBe('encryption configuration test.yaml cannot read 1 stored objects: 1 in /core/secrets (written by kms/kms1); add the missing provider or key (docs/operations.md "Encryption at rest")');
    } finally {
      await bytes.close();
    }
  });

  it("reports the plugin's health as upstream's kms-providers check, reusing an answer for 20 s (3 s when failing)", async () => {
    const clock = new FakeClock(Date.now());
    const config = kmsConfig(clock);
    const s = await open(freshPath(), config);
    const [check] = s.checks();
    expect(check?.name).toBe("kms-providers");
    await check!.run();
    await kms.down();
    try {
      await check!.run(); // the answer of a moment ago
      await clock.advance(20_001);
      await expect(check!.run()).rejects.toThrow(/^kms-provider-0: kmsv2 Provider kms1 is not healthy, error: the KMS plugin at unix:\/\/.* did not answer Status/);
    } finally {
      await kms.up();
    }
    // Each attempt a fresh answer (the failing one is reused 3 s); the client reconnects within a second of real time.
    const answer = async () => {
      await clock.advance(3_001);
      return check!.run().then(() => "ok", (err: Error) => err.message);
    };
    kms.healthz = "degraded";
    try {
      await expect.poll(answer, { timeout: 5000, interval: 100 }).toMatch(/kmsv2 Provider kms1 is not healthy, error: got unexpected healthz status: degraded$/);
    } finally {
      kms.healthz = "ok";
    }
    await expect.poll(answer, { timeout: 5000, interval: 100 }).toBe("ok");
    await s.close();
  });

  it("refuses KMS v1 with upstream's reason, and a kms block without an apiVersion (v1 by default)", () => {
    for (const apiVersion of ["v1", undefined]) {
      const yaml = `apiVersion: apiserver.config.platform.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n      - kms: { ${apiVersion ? `apiVersion: ${apiVersion}, ` : ""}name: k, endpoint: "unix:///tmp/k.sock" }\n`;
      expect(() => parseEncryptionConfig(yaml, "v1.yaml")).toThrow(/KMSv1 is deprecated and will only receive security updates going forward\. Use KMSv2 instead\./);
    }
    expect(() => encryptionConfig(["secrets"], [{ kms: { name: "k", endpoint: "tcp://127.0.0.1:1" } }])).toThrow(/endpoint.*unix:\/\/\/path\/to\/socket/);
    expect(() => encryptionConfig(["secrets"], [{ kms: { name: "a:b", endpoint: "unix:///tmp/k.sock" } }])).toThrow(/without ':'/);
    expect(() => encryptionConfig(["secrets"], [{ kms: { name: "k", endpoint: "unix:///tmp/k.sock" } }, { kms: { name: "k", endpoint: "unix:///tmp/j.sock" } }])).toThrow(/a KMS provider name not used earlier in the file/);
    const defaults = encryptionConfig(["secrets"], [{ kms: { name: "k", endpoint: "unix:///tmp/k.sock" } }]);
    expect(defaults.kms.map((t) => t.settings)).toEqual([{ name: "k", endpoint: "unix:///tmp/k.sock", timeoutMs: 3000 }]);
    for (const t of defaults.kms) t.close();
  });
});

// Upstream's KMS v2 metrics: key IDs by hash in a bounded set of series, calls by gRPC code.
import { createHash } from "node:crypto";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { KmsMetrics } from "../../../src/apiserver/encryption/kms-metrics.js";

const hash = (id: string) => `sha256:${createHash("sha256").update(id).digest("hex")}`;

describe("KMS metrics", () => {
  it("keeps the series of the ten key IDs used last, as upstream's LRU does, each with its count and last use", async () => {
    const m = new KmsMetrics();
    for (let i = 0; i < 12; i++) m.keyIdUsed("to_storage", "kms1", `key-${i}`, 1_000_000 + i * 1000);
    m.keyIdUsed("to_storage", "kms1", "key-2", 2_000_000); // used again: the most recent, so key-3 goes instead
    m.keyIdUsed("to_storage", "kms1", "key-12", 2_001_000);
    const registry = new Registry();
    m.register(registry);
    const text = await registry.metrics();
    const total = (id: string) => new RegExp(`apiserver_envelope_encryption_key_id_hash_total\\{transformation_type="to_storage",provider_name="kms1",key_id_hash="${hash(id)}"\\} (\\d+)`).exec(text)?.[1];
    expect([0, 1, 3].map((i) => total(`key-${i}`))).toEqual([undefined, undefined, undefined]);
    expect(total("key-2")).toBe("2");
    expect([4, 5, 6, 7, 8, 9, 10, 11, 12].map((i) => total(`key-${i}`))).toEqual(Array(9).fill("1"));
    expect(text).toContain(`apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds{transformation_type="to_storage",provider_name="kms1",key_id_hash="${hash("key-2")}"} 2000\n`);
    expect(text).not.toContain("key-2\"");
  });

  it("reports the seed cache of the provider serving now: the newest started of a name, the one before once it closes", async () => {
    const m = new KmsMetrics();
    const registry = new Registry();
    m.register(registry);
    const size = async () => /apiserver_envelope_encryption_dek_source_cache_size\{provider_name="kms1"\} (\d+)/.exec(await registry.metrics())?.[1];
    const untrackServing = m.trackSeeds("kms1", () => 3);
    expect(await size()).toBe("3");
    // A reload refused after its providers started: they close, and the serving one is reported again.
    const untrackRefused = m.trackSeeds("kms1", () => 7);
    expect(await size()).toBe("7");
    untrackRefused();
    expect(await size()).toBe("3");
    // A reload that succeeds: the new one reported, the old one retired later without taking it away.
    m.trackSeeds("kms1", () => 5);
    untrackServing();
    expect(await size()).toBe("5");
  });

  it("labels each call with the service's method and the gRPC code it ended with", async () => {
    const m = new KmsMetrics();
    m.call("kms1", "Decrypt", 0.002);
    m.call("kms1", "Decrypt", 0.003, Object.assign(new Error("deadline"), { grpcCode: 4 }));
    m.call("kms1", "Status", 0.001, new Error("not a gRPC failure"));
    const registry = new Registry();
    m.register(registry);
    const text = await registry.metrics();
    const count = (method: string, code: string) =>
      `apiserver_envelope_encryption_kms_operations_latency_seconds_count{provider_name="kms1",method_name="/v2.KeyManagementService/${method}",grpc_status_code="${code}"} 1\n`;
    expect(text).toContain(count("Decrypt", "OK"));
    expect(text).toContain(count("Decrypt", "DeadlineExceeded"));
    expect(text).toContain(count("Status", "unknown-non-grpc"));
    // 2 ms falls in upstream's 0.0016–0.0032 s bucket: 0.1 ms doubling.
    expect(text).toContain('apiserver_envelope_encryption_kms_operations_latency_seconds_bucket{le="0.0016",provider_name="kms1",method_name="/v2.KeyManagementService/Decrypt",grpc_status_code="OK"} 0\n');
    expect(text).toContain('apiserver_envelope_encryption_kms_operations_latency_seconds_bucket{le="0.0032",provider_name="kms1",method_name="/v2.KeyManagementService/Decrypt",grpc_status_code="OK"} 1\n');
  });
});

// Upstream's KMS v2 metrics (apiserver_envelope_encryption_*): each call to a plugin with its latency and gRPC code,
// the key IDs values were sealed and opened under, and what the plugins' Status answered. One set per process, as
// upstream's; each API server's registry reads it at scrape.
import { createHash } from "node:crypto";
import { Counter, Gauge, type Registry } from "prom-client";
import { AccumulatedCounter, AccumulatedHistogram } from "../../accumulated-metrics.js";
import { transformationStatus, type TransformationType } from "./metrics.js";
import { KMS_V2_SERVICE } from "./kms-wire.js";

/** Upstream's buckets: 0.1 ms doubling 20 times (the last bound ~52 s). */
const KMS_BUCKETS = Array.from({ length: 20 }, (_, i) => 0.0001 * 2 ** i);
/** Key ID label sets kept (upstream's LRU of 10): a series beyond them is dropped, least recently used first. */
const KEY_ID_SERIES = 10;

interface KmsCallLabels {
  readonly provider_name: string;
  readonly method_name: string;
  readonly grpc_status_code: string;
}

interface KeyIdUse {
  readonly labels: { readonly transformation_type: TransformationType; readonly provider_name: string; readonly key_id_hash: string };
  count: number;
  lastSeconds: number;
}

/** `sha256:<hex>`: how upstream names a key ID in logs, errors and metric labels (never the key ID itself). */
export const keyIdHash = (keyId: string): string => (keyId === "" ? "" : `sha256:${createHash("sha256").update(keyId).digest("hex")}`);

/** A Map used as an LRU of at most `max` entries: a touched key moves to the end, the first goes when it is full. */
function touch<V>(map: Map<string, V>, key: string, make: () => V, max: number): V {
  let v = map.get(key);
  if (v !== undefined) map.delete(key);
  else v = make();
  map.set(key, v);
  if (map.size > max) map.delete(map.keys().next().value!);
  return v;
}

export class KmsMetrics {
  readonly #latency = new AccumulatedHistogram<KmsCallLabels>({
    name: "apiserver_envelope_encryption_kms_operations_latency_seconds",
    help: "KMS operation duration with gRPC error code status total.",
    buckets: KMS_BUCKETS,
    registers: [],
  });
  readonly #keyIdUses = new Map<string, KeyIdUse>();
  readonly #statusKeyIds = new Map<string, { readonly labels: { readonly provider_name: string; readonly key_id_hash: string }; lastSeconds: number }>();
  readonly #invalid = new AccumulatedCounter<{ readonly provider_name: string; readonly error: string }>({
    name: "apiserver_envelope_encryption_invalid_key_id_from_status_total",
    help: "Number of times an invalid keyID is returned by the Status RPC call split by error.",
    registers: [],
  });
  readonly #hashes = new Map<string, string>();
  /**
   * The started providers' counts of unwrapped seeds, by name, oldest first: after a reload the new provider of a name
   * is reported, and after a refused one (its providers started, then closed) the one still serving again.
   */
  readonly #seedCaches = new Map<string, Array<() => number>>();

  /** One call of `method` (Status, Encrypt, Decrypt) to the plugin of provider `provider`. */
  call(provider: string, method: string, seconds: number, error?: unknown): void {
    const labels = { provider_name: provider, method_name: `/${KMS_V2_SERVICE}/${method}`, grpc_status_code: transformationStatus(error) };
    this.#latency.observe(`${labels.provider_name}\u0000${labels.method_name}\u0000${labels.grpc_status_code}`, labels, seconds);
  }

  /** A value sealed (`to_storage`) or opened (`from_storage`) under `keyId`. */
  keyIdUsed(type: TransformationType, provider: string, keyId: string, nowMs: number): void {
    const hash = this.#hash(keyId);
    const use = touch(this.#keyIdUses, `${type}\u0000${provider}\u0000${hash}`, () => ({ labels: { transformation_type: type, provider_name: provider, key_id_hash: hash }, count: 0, lastSeconds: 0 }), KEY_ID_SERIES);
    use.count++;
    use.lastSeconds = nowMs / 1000;
  }

  /** The plugin's Status answered `keyId`. */
  keyIdFromStatus(provider: string, keyId: string, nowMs: number): void {
    const hash = this.#hash(keyId);
    touch(this.#statusKeyIds, `${provider}\u0000${hash}`, () => ({ labels: { provider_name: provider, key_id_hash: hash }, lastSeconds: 0 }), KEY_ID_SERIES).lastSeconds = nowMs / 1000;
  }

  /** The plugin's Status answered a key ID that cannot be used: `empty` or `too_long` (upstream's codes). */
  invalidKeyIdFromStatus(provider: string, error: "empty" | "too_long"): void {
    this.#invalid.inc(`${provider}\u0000${error}`, () => ({ provider_name: provider, error }));
  }

  /** Reports `size()` as the provider's seed cache until the returned function is called (its transformer closed). */
  trackSeeds(provider: string, size: () => number): () => void {
    const sizes = this.#seedCaches.get(provider) ?? [];
    this.#seedCaches.set(provider, [...sizes, size]);
    return () => {
      const left = (this.#seedCaches.get(provider) ?? []).filter((s) => s !== size);
      if (left.length > 0) this.#seedCaches.set(provider, left);
      else this.#seedCaches.delete(provider);
    };
  }

  register(registry: Registry): void {
    const seedCaches = this.#seedCaches;
    const uses = this.#keyIdUses;
    const statusKeyIds = this.#statusKeyIds;
    const registers = [registry];
    this.#latency.register(registry);
    this.#invalid.register(registry);
    // Totals are kept here, so each registry's series are set from them at scrape (and dropped with their label set).
    new Counter({
      name: "apiserver_envelope_encryption_key_id_hash_total",
      help: "Number of times a keyID is used split by transformation type and provider.",
      labelNames: ["transformation_type", "provider_name", "key_id_hash"],
      registers,
      collect() {
        this.reset();
        for (const use of uses.values()) this.inc(use.labels, use.count);
      },
    });
    new Gauge({
      name: "apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds",
      help: "The last time in seconds when a keyID was used.",
      labelNames: ["transformation_type", "provider_name", "key_id_hash"],
      registers,
      collect() {
        this.reset();
        for (const use of uses.values()) this.set(use.labels, use.lastSeconds);
      },
    });
    new Gauge({
      name: "apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds",
      help: "The last time in seconds when a keyID was returned by the Status RPC call.",
      labelNames: ["provider_name", "key_id_hash"],
      registers,
      collect() {
        this.reset();
        for (const s of statusKeyIds.values()) this.set(s.labels, s.lastSeconds);
      },
    });
    new Gauge({
      name: "apiserver_envelope_encryption_dek_source_cache_size",
      help: "Number of records in data encryption key (DEK) source cache. On a restart, this value is an approximation of the number of decrypt RPC calls the server will make to the KMS plugin.",
      labelNames: ["provider_name"],
      registers,
      collect() {
        this.reset();
        for (const [provider, sizes] of seedCaches) this.set({ provider_name: provider }, sizes.at(-1)!());
      },
    });
  }

  #hash(keyId: string): string {
    let hash = this.#hashes.get(keyId);
    if (hash === undefined) {
      hash = keyIdHash(keyId);
      // Key IDs change rarely; the memory of their hashes is bounded all the same.
      touch(this.#hashes, keyId, () => hash!, 64);
    }
    return hash;
  }
}

/** The process's KMS metrics. */
export const kmsMetrics = new KmsMetrics();

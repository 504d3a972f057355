// Upstream's metrics of encryption at rest: each value sealed or opened (by direction, provider prefix and outcome,
// with its latency), and the automatic reloads of the configuration.
import { performance } from "node:perf_hooks";
import { Counter, Gauge, type Registry } from "prom-client";
import { AccumulatedCounter, AccumulatedHistogram } from "../../accumulated-metrics.js";
import type { ReloadStats } from "./encrypted-storage.js";
import type { Transformer } from "./providers.js";

export type TransformationType = "from_storage" | "to_storage";

interface TransformationLabels {
  readonly transformation_type: TransformationType;
  readonly transformer_prefix: string;
}

/** Upstream's buckets: 5 µs doubling 25 times (a cipher in the process takes microseconds, a KMS plugin may take 100s of ms). */
const TRANSFORMATION_BUCKETS = Array.from({ length: 25 }, (_, i) => 5e-6 * 2 ** i);
/** gRPC's codes by number, as Go names them: upstream's `status` label of an operation a KMS plugin failed. */
const GRPC_CODES = ["OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"];
const KEYED = /^(k8s:enc:(?:aescbc|aesgcm|secretbox):v1:)(.+:)$/;

/** `OK`; the gRPC code of a KMS plugin's failure anywhere in the error's causes; else upstream's `unknown-non-grpc`. */
export function transformationStatus(error: unknown): string {
  if (error === undefined) return "OK";
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { grpcCode?: unknown }).grpcCode;
    if (typeof code === "number" && GRPC_CODES[code] !== undefined) return GRPC_CODES[code]!;
  }
  return "unknown-non-grpc";
}

/**
 * The `transformer_prefix` values of one operation, as upstream's nested transformers record them: a keyed provider
 * (aescbc, aesgcm, secretbox) once for its key (`key1:`) and once for the provider (`k8s:enc:aesgcm:v1:`); a KMS
 * provider its whole prefix; identity `identity` when it reads and its empty prefix when it writes.
 */
function prefixesOf(t: Transformer, type: TransformationType): readonly string[] {
  if (t.prefix.length === 0) return [type === "from_storage" ? "identity" : ""];
  const whole = t.prefix.toString("latin1");
  const keyed = KEYED.exec(whole);
  return keyed ? [keyed[2]!, keyed[1]!] : [whole];
}

/**
 * `apiserver_storage_transformation_operations_total` and `apiserver_storage_transformation_duration_seconds`: the
 * store adds to plain numbers as it seals and opens values (before any registry exists); a registry reads them at
 * scrape. A value served from the texts the store keeps is not transformed, and not counted.
 */
export class TransformationMetrics {
  readonly #counts = new AccumulatedCounter<TransformationLabels & { readonly status: string }>({
    name: "apiserver_storage_transformation_operations_total",
    help: "Total number of transformations.",
    registers: [],
  });
  readonly #durations = new AccumulatedHistogram<TransformationLabels>({
    name: "apiserver_storage_transformation_duration_seconds",
    help: "Latencies in seconds of value transformation operations.",
    buckets: TRANSFORMATION_BUCKETS,
    registers: [],
  });
  readonly #prefixes = new WeakMap<Transformer, { readonly from_storage: readonly string[]; readonly to_storage: readonly string[] }>();

  /** One operation by `t` since `startedAt` (performance.now()); a failure has an `error`. */
  record(type: TransformationType, t: Transformer, startedAt: number, error?: unknown): void {
    this.#add(type, this.#prefixesOf(t, type), startedAt, error);
  }

  /**
   * A stored value no provider of `list` reads by its whole prefix: `unknown`, and (as upstream's nested transformers
   * record it) each keyed provider whose own prefix it carries, e.g. a key removed from the file.
   */
  unmatched(list: readonly Transformer[], value: Buffer, startedAt: number, error: unknown): void {
    const prefixes = new Set(["unknown"]);
    for (const t of list) {
      const provider = this.#prefixesOf(t, "from_storage")[1];
      if (provider !== undefined && value.subarray(0, provider.length).toString("latin1") === provider) prefixes.add(provider);
    }
    this.#add("from_storage", [...prefixes], startedAt, error);
  }

  #add(type: TransformationType, prefixes: readonly string[], startedAt: number, error: unknown): void {
    const seconds = (performance.now() - startedAt) / 1000;
    const status = transformationStatus(error);
    for (const prefix of prefixes) {
      const key = `${type}\u0000${prefix}`;
      this.#counts.inc(`${key}\u0000${status}`, () => ({ transformation_type: type, transformer_prefix: prefix, status }));
      // Upstream observes the latency of successes only.
      if (error === undefined) this.#durations.observe(key, { transformation_type: type, transformer_prefix: prefix }, seconds);
    }
  }

  register(registry: Registry): void {
    this.#counts.register(registry);
    this.#durations.register(registry);
  }

  #prefixesOf(t: Transformer, type: TransformationType): readonly string[] {
    let known = this.#prefixes.get(t);
    if (known === undefined) this.#prefixes.set(t, (known = { from_storage: prefixesOf(t, "from_storage"), to_storage: prefixesOf(t, "to_storage") }));
    return known[type];
  }
}

/** Upstream's encryption configuration reload metrics (without its apiserver_id_hash label: one server per registry). */
export function encryptionReloadMetrics(registers: Registry[], stats: () => ReloadStats): void {
  let reported = { success: 0, failure: 0 };
  new Counter({
    name: "apiserver_encryption_config_controller_automatic_reloads_total",
    help: "Total number of reload successes and failures of encryption configuration split by apiserver identity.",
    labelNames: ["status"],
    registers,
    collect() {
      const now = stats();
      for (const status of ["success", "failure"] as const) {
        this.inc({ status }, now[status] - reported[status]);
      }
      reported = { success: now.success, failure: now.failure };
    },
  });
  new Gauge({
    name: "apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds",
    help: "Timestamp of the last successful or failed automatic reload of encryption configuration split by apiserver identity.",
    labelNames: ["status"],
    registers,
    collect() {
      const now = stats();
      if (now.lastSuccess !== undefined) this.set({ status: "success" }, now.lastSuccess);
      if (now.lastFailure !== undefined) this.set({ status: "failure" }, now.lastFailure);
    },
  });
}

// The SQLite store as Prometheus reads it: how long each flush to disk took, how many writes each group commit
// carried, and the database's size. Kept per process (as upstream's KMS metrics are) and read by each server's registry.
import type { Registry } from "prom-client";
import { AccumulatedHistogram, registerIn } from "../../accumulated-metrics.js";

/** The write-ahead log after a commit, or the database file after a checkpoint copied the log into it. */
export type FlushedFile = "log" | "database";

/** 0.1 ms doubling 17 times (to ~6.6 s): a local disk's fdatasync is a fraction of a millisecond, a slow volume's seconds. */
const FLUSH_BUCKETS = Array.from({ length: 17 }, (_, i) => 0.0001 * 2 ** i);
/** 1 to the store's largest batch (256 writes in one transaction). */
const COMMIT_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const FILE_LABELS = { log: { file: "log" }, database: { file: "database" } } as const;
const NO_LABELS = {};

/** An open store, as the size gauge reads it: undefined when it cannot say (closed meanwhile). */
export interface SizedStore {
  sizeBytes(): number | undefined;
}

class SqliteMetrics {
  /** The stores open in this process (one per server; tests open many). */
  readonly #open = new Set<SizedStore>();
  /** A gauge read at scrape, with no sample while no store is open (a server on etcd), where prom-client's shows 0. */
  readonly #size = {
    name: "platform_ca_storage_size_bytes",
    help: "Size of the SQLite store's database (its pages, as they are once the write-ahead log is copied in), as etcd reports its database's size; the sum over the stores the process has open.",
    type: "gauge",
    aggregator: "sum",
    get: () => {
      let bytes = 0;
      for (const store of this.#open) bytes += store.sizeBytes() ?? 0;
      const values = this.#open.size === 0 ? [] : [{ labels: {}, value: bytes }];
      return Promise.resolve({ name: this.#size.name, help: this.#size.help, type: this.#size.type, aggregator: this.#size.aggregator, values });
    },
    reset: () => undefined,
  };
  readonly #flushes = new AccumulatedHistogram<{ readonly file: FlushedFile }>({
    name: "platform_ca_storage_flush_duration_seconds",
    help: "Time from handing a flush of the SQLite store's write-ahead log (file=\"log\", before the writes of a commit are acknowledged) or database file (file=\"database\", after a checkpoint) to the thread pool until the server's thread hears it is on disk: the disk's time, and on a busy server the wait for a pool thread and for the event loop. Failed flushes included.",
    buckets: FLUSH_BUCKETS,
    registers: [],
  });
  readonly #commits = new AccumulatedHistogram<Record<string, never>>({
    name: "platform_ca_storage_commit_writes",
    help: "Writes in each transaction of the SQLite store's group commit (the writes that arrived while the previous flush ran share one).",
    buckets: COMMIT_BUCKETS,
    registers: [],
  });

  /** One flush of `file` handed to the pool at `startedAt` (performance.now()) has ended, well or not, as the thread hears it. */
  flushed(file: FlushedFile, startedAt: number): void {
    this.#flushes.observe(file, FILE_LABELS[file], (performance.now() - startedAt) / 1000);
  }

  /** One transaction of `writes` writes committed. */
  committed(writes: number): void {
    this.#commits.observe("", NO_LABELS, writes);
  }

  /** Reports `store`'s size from now until `untrack`. */
  track(store: SizedStore): void {
    this.#open.add(store);
  }

  untrack(store: SizedStore): void {
    this.#open.delete(store);
  }

  register(registry: Registry): void {
    this.#flushes.register(registry);
    this.#commits.register(registry);
    registerIn(registry, this.#size);
  }
}

export const sqliteMetrics = new SqliteMetrics();

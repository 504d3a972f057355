// Compaction of a store shared by several API servers. The age rule uses upstream's scheme (kube-apiserver's
// etcd3/compact.go): a transaction on the version of `compact_rev_key` elects one replica per interval, so replicas do
// not each compact on their own phase. The revision-count rule needs no election: every replica derives the same target
// from the one global revision, and compacting to an already compacted revision is a no-op.
import { silentLogger, type Logger } from "../../../logger.js";
import type { Clock } from "../../../time/clock.js";
import { ageCheckInterval, resolveRetention, revisionTarget, type Retention, type RetentionOptions } from "../retention.js";
import type { KvMethod } from "./client.js";
import type { RangeResponse, TxnResponse } from "./kv.js";

type Call = <T>(method: KvMethod, request: object, write?: boolean) => Promise<T>;

/** Upstream's default compaction interval. */
const DEFAULT_RETENTION: Retention = { revisions: Infinity, ageMs: 5 * 60_000 };

export class EtcdCompactor {
  readonly #call: Call;
  readonly #key: Buffer;
  readonly #retention: Retention;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #batch: number;
  /** (revision, time) of writes seen by this replica, oldest first: which revisions are older than the age limit. */
  #samples: Array<[number, number]> = [];
  /** Version of compact_rev_key this replica last saw: the "term" its next election transaction expects. */
  #version = 0;
  #known = 0;
  #nextAgeCheck: number;
  #running: Promise<void> = Promise.resolve();

  constructor(call: Call, key: Buffer, retention: RetentionOptions | undefined, clock: Clock, logger: Logger = silentLogger()) {
    this.#call = call;
    this.#key = key;
    this.#retention = resolveRetention(retention, DEFAULT_RETENTION);
    this.#clock = clock;
    this.#logger = logger;
    this.#batch = this.#retention.revisions === Infinity ? Infinity : Math.max(1, Math.min(1000, Math.floor(this.#retention.revisions / 10)));
    this.#nextAgeCheck = clock.now() + ageCheckInterval(this.#retention);
  }

  /** The compacted revision this replica knows of without asking etcd. */
  get known(): number {
    return this.#known;
  }

  /** The compacted revision: this replica's own compactions and the last one recorded by any replica. */
  async compacted(): Promise<number> {
    await this.#running;
    const res = await this.#call<RangeResponse>("Range", { key: this.#key });
    const kv = res.kvs[0];
    if (kv) {
      this.#version = Math.max(this.#version, kv.version);
      this.#known = Math.max(this.#known, Number(kv.value.toString()));
    }
    return this.#known;
  }

  /** After a write at `revision`: applies retention (awaited, so a caller sees its effect like with SQLite). */
  async wrote(revision: number): Promise<void> {
    const now = this.#clock.now();
    this.#samples.push([revision, now]);
    const byCount = revisionTarget(this.#retention, revision);
    if (byCount >= this.#known + this.#batch) await this.#serial(() => this.#compact(byCount));
    if (now < this.#nextAgeCheck) return;
    this.#nextAgeCheck = now + ageCheckInterval(this.#retention);
    const cutoff = now - this.#retention.ageMs;
    let byAge = 0;
    while (this.#samples.length > 0 && this.#samples[0]![1] < cutoff) byAge = this.#samples.shift()![0];
    if (byAge > this.#known) await this.#serial(() => this.#elect(byAge));
  }

  /** An explicit compaction (`compact(revision)` of the contract). */
  compact(revision: number): Promise<void> {
    return this.#serial(() => this.#compact(revision), true);
  }

  stop(): void {
    this.#samples = [];
  }

  async #serial(fn: () => Promise<void>, rethrow = false): Promise<void> {
    const run = this.#running.then(fn);
    this.#running = run.catch(() => {});
    try {
      await run;
    } catch (err) {
      if (rethrow) throw err;
      // The write that triggered retention is committed; failing it would make its caller retry a done write.
      this.#logger.warn({ err }, "etcd compaction failed; history is kept until the next attempt");
    }
  }

  /** One replica per interval wins the transaction on compact_rev_key's version and compacts; the others adopt it. */
  async #elect(target: number): Promise<void> {
    const res = await this.#call<TxnResponse>("Txn", {
      compare: [{ key: this.#key, target: "VERSION", result: "EQUAL", version: this.#version }],
      success: [{ request_put: { key: this.#key, value: Buffer.from(String(target)) } }],
      failure: [{ request_range: { key: this.#key } }],
    }, true);
    if (!res.succeeded) {
      const kv = res.responses[0]?.response_range?.kvs[0];
      this.#version = kv?.version ?? 0;
      this.#known = Math.max(this.#known, Number(kv?.value.toString() ?? 0));
      return;
    }
    this.#version++;
    await this.#compact(target);
  }

  async #compact(revision: number): Promise<void> {
    if (revision <= this.#known) return;
    try {
      await this.#call("Compact", { revision, physical: false }, true);
    } catch (err) {
      // Another replica compacted further already: the history is gone either way.
      if (!/required revision has been compacted/.test((err as Error).message)) throw err;
    }
    this.#known = Math.max(this.#known, revision);
  }
}

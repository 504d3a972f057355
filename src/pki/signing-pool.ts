// SigningPool: issuance on worker threads when there is more than one core and a backlog; on the calling thread otherwise.
//
// One CSR with nothing queued is issued on the calling thread at once (no message round trip, no thread started).
// Jobs go to the workers, batched per message, when the caller says more work is waiting (`backlog`) or jobs are
// already out; the workers are started only once the waiting work (backlog × the measured time of one issuance with
// that CA) is worth more than starting them, so a short run of cheap signatures never pays for threads. Only CA keys held in the process (a KeyObject) go to workers, cloned by postMessage (never
// exported as text, never logged); a token key (PKCS#11, `keySigner`) signs on its own path, in the calling thread.
import os from "node:os";
import { performance } from "node:perf_hooks";
import { asErrorCode, invalidOption, PlatformError, toPlatformError } from "../errors.js";
import type { Logger } from "../logger.js";
import { parseCsr } from "./csr.js";
import { sharedVerifiedMemo } from "./csr-signature.js";
import { issueCertificate, issueCertificateAsync, issueDerNatively, type IssuedCertificate } from "./issue.js";
import { applyRule } from "./pool-rules.js";
import { startWorker, workerScript, WorkerIds, type Slot } from "./signing-pool-slots.js";
import type { Pending, PoolJob, SigningPoolOptions } from "./signing-pool-types.js";
import type { SharedVerifiedMemo } from "./verified-memo.js";
import { packBatch, pemTexts, resultAt, transferList, type FromWorker, type ToWorker, type WireResults } from "./signing-pool-wire.js";
import type { CaKeyPair } from "./types.js";

const MAX_BATCHES_IN_FLIGHT = 2;
/** Weight of the newest sample in the running mean of one issuance's time. */
const COST_WEIGHT = 0.2;

export class SigningPool {
  readonly workers: number;
  private readonly batchSize: number;
  /** None given: a lost worker is not logged (and no logger is built: `sign` of many files does not load pino). */
  private readonly logger: Logger | undefined;
  private readonly script: string | URL | undefined;
  private readonly startCostMs: number;
  private readonly verifiedMemo: SharedVerifiedMemo | undefined;
  /** Running mean of one issuance on the calling thread, per CA, in ms. */
  private readonly costs = new WeakMap<CaKeyPair, number>();
  private slots: Slot[] = [];
  private queue: Pending[] = [];
  private readonly ids = new WorkerIds();
  private nextBatchId = 1;
  private outstanding = 0;
  private flushScheduled = false;
  private closing = false;
  private idle: (() => void) | undefined;
  /** Jobs issued on the calling thread and on the workers, for metrics and tests. */
  readonly counts = { inline: 0, workers: 0 };

  constructor(options: SigningPoolOptions = {}) {
    const cores = os.availableParallelism();
    const workers = options.workers ?? (cores > 1 ? cores : 0);
    if (!Number.isSafeInteger(workers) || workers < 0 || workers > 256) throw invalidOption("workers", "to be an integer 0–256", options.workers);
    const batchSize = options.batchSize ?? 64;
    if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > 4096) throw invalidOption("batchSize", "to be an integer 1–4096", batchSize);
    this.workers = workers;
    this.batchSize = batchSize;
    this.script = options.workerScript;
    this.startCostMs = options.startCostMs ?? 50;
    if (!(this.startCostMs >= 0)) throw invalidOption("startCostMs", "to be ≥ 0", options.startCostMs);
    this.logger = options.logger;
    this.verifiedMemo = options.verifiedMemo ?? sharedVerifiedMemo();
  }

  /** Whether worker threads are running (they start with the first job that goes to them). */
  started(): boolean {
    return this.slots.length > 0;
  }

  /**
   * Issues one certificate. `backlog` is how much more work the caller has waiting: with none, and no jobs out,
   * the job runs on the calling thread now. Rejects with the PlatformError of that job (CSR_SIGNATURE, ...).
   */
  issue(job: PoolJob, backlog = 0): Promise<IssuedCertificate> {
    if (this.closing) return Promise.reject(new PlatformError("NOT_READY", "the signing pool is closed"));
    // Rules read the request where it is signed: only bytes are read there.
    if (job.check !== undefined && !(job.csr instanceof Uint8Array)) return Promise.reject(new PlatformError("INVALID_ARGUMENT", "a job with rules gives its CSR as bytes"));
    if (!this.offload(job.ca, backlog)) return this.inline(job);
    this.outstanding += 1;
    this.counts.workers += 1;
    return new Promise<IssuedCertificate>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // Jobs submitted in the same tick share batches.
        queueMicrotask(() => this.flush());
      }
    });
  }

  private offload(ca: CaKeyPair, backlog: number): boolean {
    if (this.workers === 0 || ca.privateKey === undefined || ca.keySigner !== undefined) return false;
    if (this.outstanding > 0) return true;
    if (backlog <= 0) return false;
    // A CA not yet timed counts as free: its first job runs here and gives the time.
    return this.started() || backlog * (this.costs.get(ca) ?? 0) >= this.startCostMs;
  }

  private inline(job: PoolJob): Promise<IssuedCertificate> {
    this.counts.inline += 1;
    const start = performance.now();
    try {
      const extra = job.signerExtensions && { signerExtensions: job.signerExtensions };
      if (job.check !== undefined) applyRule(job.check.rules.rule, job.csr as Uint8Array, job.check.request);
      // DER bytes go through the native call first: read, checked and issued at once.
      let issued = job.csr instanceof Uint8Array ? issueDerNatively({ ca: job.ca, der: job.csr, profile: job.profile, validity: job.validity, ...extra }) : undefined;
      if (issued === undefined) {
        const csr = typeof job.csr === "string" || job.csr instanceof Uint8Array ? parseCsr(job.csr) : job.csr;
        const request = { ca: job.ca, csr, profile: job.profile, validity: job.validity, ...extra };
        if (job.ca.keySigner) return issueCertificateAsync(request).catch((e: unknown) => Promise.reject(toPlatformError(e)));
        issued = issueCertificate(request);
      }
      const ms = performance.now() - start;
      const mean = this.costs.get(job.ca);
      this.costs.set(job.ca, mean === undefined ? ms : mean + COST_WEIGHT * (ms - mean));
      return Promise.resolve(issued);
    } catch (err) {
      return Promise.reject(toPlatformError(err));
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.slots.length === 0 && this.queue.length > 0) {
      try {
        this.slots = Array.from({ length: this.workers }, () => this.spawn());
      } catch (err) {
        return this.failQueue(toPlatformError(err));
      }
    }
    // What is queued is shared out over the workers that can take a batch: 16 jobs and two idle workers make two
    // batches of 8, not one of 16 while the other worker idles.
    const free = this.slots.filter((s) => !s.dead && s.inFlight.size < MAX_BATCHES_IN_FLIGHT).length;
    const share = Math.min(this.batchSize, Math.ceil(this.queue.length / Math.max(1, free)));
    while (this.queue.length > 0) {
      const slot = this.leastBusy();
      if (slot === undefined) break;
      const pending = this.queue.splice(0, share);
      const id = this.nextBatchId++;
      slot.inFlight.set(id, pending);
      const batch = packBatch(pending.map((p) => p.job), { ca: (ca) => this.ids.caId(slot, ca), rules: (rules) => this.ids.ruleId(slot, rules) });
      slot.worker.ref();
      slot.worker.postMessage({ type: "batch", id, batch } satisfies ToWorker, transferList(batch.csrBytes, batch.csrEnds, batch.caIds, batch.profileIndex, batch.extensionIndex, batch.times, batch.ruleIds));
      this.ids.forgetDropped(this.slots);
    }
    this.checkIdle();
  }

  private spawn(): Slot {
    const worker = startWorker(this.script ?? workerScript(), this.verifiedMemo?.buffer);
    const slot: Slot = { worker, inFlight: new Map(), cas: new Set(), dead: false };
    worker.on("message", (msg: FromWorker) => this.settle(slot, msg.id, msg.results));
    worker.on("error", (err) => this.lost(slot, err));
    worker.on("exit", (code) => {
      if (!this.closing || slot.inFlight.size > 0) this.lost(slot, new Error(`signing worker exited with code ${code}`));
    });
    // An idle worker does not keep the process alive; one with work out does (ref() in flush).
    worker.unref();
    return slot;
  }

  private leastBusy(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) if (!s.dead && s.inFlight.size < MAX_BATCHES_IN_FLIGHT && (!best || s.inFlight.size < best.inFlight.size)) best = s;
    return best;
  }

  private settle(slot: Slot, id: number, results: WireResults): void {
    const pending = slot.inFlight.get(id);
    if (pending === undefined) return;
    slot.inFlight.delete(id);
    this.deliver(pending, results);
    if (slot.inFlight.size === 0) slot.worker.unref();
    this.flush();
  }

  private deliver(pending: readonly Pending[], results: WireResults): void {
    this.outstanding -= pending.length;
    if (results.derEnds.length < pending.length) {
      for (const p of pending) p.reject(new PlatformError("INTERNAL", "signing worker returned fewer results than jobs"));
      return;
    }
    const texts = pemTexts(results);
    pending.forEach((p, i) => {
      const r = resultAt(results, i, texts);
      if ("code" in r) p.reject(new PlatformError(asErrorCode(r.code, "INTERNAL"), r.message));
      else p.resolve({ der: r.der, pem: r.pem, serialHex: r.serialHex, notBefore: p.job.validity.notBefore, notAfter: p.job.validity.notAfter });
    });
  }

  private lost(slot: Slot, err: Error): void {
    if (slot.dead) return;
    slot.dead = true;
    const error = new PlatformError("INTERNAL", `signing worker failed: ${err.message}`, { cause: err });
    for (const pending of slot.inFlight.values()) {
      this.outstanding -= pending.length;
      for (const p of pending) p.reject(error);
    }
    slot.inFlight.clear();
    if (this.closing) return this.checkIdle();
    this.logger?.error({ err: err.message }, "signing worker failed; starting a new one");
    void slot.worker.terminate();
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots[index] = this.spawn();
    this.flush();
  }

  private failQueue(err: PlatformError): void {
    const failed = this.queue.splice(0);
    this.outstanding -= failed.length;
    for (const p of failed) p.reject(err);
    this.checkIdle();
  }

  private checkIdle(): void {
    if (this.idle && this.queue.length === 0 && this.slots.every((s) => s.inFlight.size === 0)) this.idle();
  }

  /** Finishes the submitted jobs, then stops the workers. Later issue() calls reject with NOT_READY. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const drained = new Promise<void>((resolve) => (this.idle = resolve));
    this.checkIdle();
    await drained;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots = [];
  }
}

// SigningPool: parse + verify + issue on worker threads, jobs batched per message; `workers: 0` runs in-process.
// A benchmark component (bench:sign's multi-core row): no product path signs through it.
//
// Worker script: the compiled sibling `pool-worker.js` (dist/test/bench/pool/ after `npm run build`); `workerScript`
// overrides it (the pool tests compile the worker into a temporary directory and pass it here).
import { Worker } from "node:worker_threads";
import { compiledScript } from "../../../src/compiled-script.js";
import { asErrorCode, invalidOption, PlatformError } from "../../../src/errors.js";
import { silentLogger, type Logger } from "../../../src/logger.js";
import type { IssuedCertificate, Issuer } from "../../../src/pki/issue.js";
import { exportPrivateKeyPem } from "../../../src/pki/keys.js";
import { issuerFor, POOL_WORKER_KIND, processBatch, resultAt, transferList, type FromWorker, type ToWorker, type WireBatch, type WireCa, type WireResults } from "./pool-worker.js";
import type { CaKeyPair, CertificateProfile, Validity } from "../../../src/pki/types.js";

export interface SigningPoolOptions {
  /** Worker threads; 0 runs every job on the calling thread. */
  readonly workers: number;
  readonly ca: CaKeyPair;
  /** Jobs per message to a worker (default 64). */
  readonly batchSize?: number;
  /** Path or file URL of the compiled worker script (see the header of this file). */
  readonly workerScript?: string | URL;
  readonly logger?: Logger;
}

export interface PoolJob {
  /** PEM text or DER bytes of the CSR; it is parsed and its signature verified in the worker. */
  readonly csr: string | Uint8Array;
  readonly profile: CertificateProfile;
  readonly validity: Validity;
}

interface Pending {
  readonly job: PoolJob;
  readonly resolve: (cert: IssuedCertificate) => void;
  readonly reject: (err: PlatformError) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  readonly inFlight: Map<number, Pending[]>;
  dead: boolean;
}

const MAX_BATCHES_IN_FLIGHT = 2;

export class SigningPool {
  private readonly options: SigningPoolOptions;
  private readonly batchSize: number;
  private readonly logger: Logger;
  private wireCa: WireCa;
  private issuer: Issuer | undefined;
  private slots: Slot[] = [];
  private queue: Pending[] = [];
  private started: Promise<void> | undefined;
  private flushScheduled = false;
  private closing = false;
  private nextId = 1;
  private idle: (() => void) | undefined;

  constructor(options: SigningPoolOptions) {
    if (!Number.isSafeInteger(options.workers) || options.workers < 0 || options.workers > 256) {
      throw invalidOption("workers", "to be an integer 0–256", options.workers);
    }
    const batchSize = options.batchSize ?? 64;
    if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > 4096) throw invalidOption("batchSize", "to be an integer 1–4096", batchSize);
    if (options.ca?.privateKey === undefined) throw invalidOption("ca", "to be a loaded CaKeyPair", typeof options.ca);
    this.options = options;
    this.batchSize = batchSize;
    this.logger = options.logger ?? silentLogger();
    this.wireCa = { certPem: options.ca.certPem, keyPem: exportPrivateKeyPem(options.ca.privateKey) };
  }

  get workers(): number {
    return this.options.workers;
  }

  /** Starts the workers and loads the CA in each; issue() calls it on first use. */
  start(): Promise<void> {
    this.started ??= this.spawnAll();
    return this.started;
  }

  private async spawnAll(): Promise<void> {
    if (this.options.workers === 0) {
      this.issuer = issuerFor(this.wireCa);
      return;
    }
    const script = this.options.workerScript ?? resolveWorkerScript();
    this.slots = Array.from({ length: this.options.workers }, () => this.spawn(script));
    try {
      await Promise.all(this.slots.map((s) => s.ready));
    } catch (err) {
      for (const s of this.slots) s.dead = true;
      await Promise.all(this.slots.map((s) => s.worker.terminate()));
      this.slots = [];
      throw err;
    }
  }

  private spawn(script: string | URL): Slot {
    const worker = new Worker(script, { workerData: { kind: POOL_WORKER_KIND } });
    const slot: Slot = { worker, ready: Promise.resolve(), inFlight: new Map(), dead: false };
    slot.ready = this.loadCa(slot, this.wireCa);
    worker.on("message", (msg: FromWorker) => {
      if (msg.type === "results") this.settle(slot, msg.id, msg.results);
    });
    worker.on("error", (err) => this.lost(slot, err));
    worker.on("exit", (code) => {
      if (!this.closing || slot.inFlight.size > 0) this.lost(slot, new Error(`signing worker exited with code ${code}`));
    });
    return slot;
  }

  private loadCa(slot: Slot, ca: WireCa): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onMessage = (msg: FromWorker) => {
        if (msg.type === "results") return;
        slot.worker.off("message", onMessage);
        if (msg.type === "ready") resolve();
        else reject(new PlatformError(asErrorCode(msg.code, "CA_INVALID"), `signing worker cannot load the CA: ${msg.message}`));
      };
      slot.worker.on("message", onMessage);
      slot.worker.postMessage({ type: "ca", ca } satisfies ToWorker);
    });
  }

  /** Uses another CA for the jobs submitted from now on (e.g. after CaSource reloaded the files). */
  async updateCa(ca: CaKeyPair): Promise<void> {
    if (ca.privateKey === undefined) throw invalidOption("ca", "to hold its key in the process (worker threads cannot share a token key)", "keySigner");
    this.wireCa = { certPem: ca.certPem, keyPem: exportPrivateKeyPem(ca.privateKey) };
    if (this.started === undefined) return;
    await this.started;
    if (this.options.workers === 0) this.issuer = issuerFor(this.wireCa);
    else await Promise.all(this.slots.map((s) => (s.ready = this.loadCa(s, this.wireCa))));
  }

  /** Parses, verifies and issues one CSR. Rejects with the PlatformError of that CSR (CSR_SIGNATURE, ...). */
  issue(job: PoolJob): Promise<IssuedCertificate> {
    if (this.closing) return Promise.reject(new PlatformError("NOT_READY", "the signing pool is closed"));
    return new Promise<IssuedCertificate>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        // Jobs submitted in the same tick share batches.
        queueMicrotask(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    try {
      await this.start();
    } catch (err) {
      this.failQueue(err as PlatformError);
      return;
    }
    if (this.options.workers === 0) return this.flushInProcess();
    for (;;) {
      if (this.queue.length === 0) break;
      const slot = this.leastBusy();
      if (slot === undefined) break;
      const pending = this.queue.splice(0, this.batchSize);
      const id = this.nextId++;
      slot.inFlight.set(id, pending);
      const batch = toWire(pending);
      slot.worker.postMessage({ type: "batch", id, batch } satisfies ToWorker, transferList(batch.csrBytes, batch.csrEnds, batch.profileIndex, batch.times));
    }
    this.checkIdle();
  }

  private leastBusy(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) if (s.inFlight.size < MAX_BATCHES_IN_FLIGHT && (!best || s.inFlight.size < best.inFlight.size)) best = s;
    return best;
  }

  private flushInProcess(): void {
    const pending = this.queue.splice(0, this.batchSize);
    if (pending.length > 0) deliver(pending, processBatch(this.issuer!, toWire(pending)));
    // Yield between batches so a large submission does not hold the event loop.
    if (this.queue.length > 0) setImmediate(() => this.flushInProcess());
    else this.checkIdle();
  }

  private settle(slot: Slot, id: number, results: WireResults): void {
    const pending = slot.inFlight.get(id);
    if (pending === undefined) return;
    slot.inFlight.delete(id);
    deliver(pending, results);
    void this.flush();
  }

  private lost(slot: Slot, err: Error): void {
    if (slot.dead) return;
    slot.dead = true;
    const error = new PlatformError("INTERNAL", `signing worker failed: ${err.message}`, { cause: err });
    for (const pending of slot.inFlight.values()) for (const p of pending) p.reject(error);
    slot.inFlight.clear();
    if (this.closing) return this.checkIdle();
    this.logger.error({ err: err.message }, "signing worker failed; starting a new one");
    void slot.worker.terminate();
    const index = this.slots.indexOf(slot);
    if (index >= 0) {
      const fresh = this.spawn(this.options.workerScript ?? resolveWorkerScript());
      this.slots[index] = fresh;
      fresh.ready.then(() => this.flush(), (e: PlatformError) => this.failQueue(e));
    }
  }

  private failQueue(err: PlatformError): void {
    for (const p of this.queue.splice(0)) p.reject(err);
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
    if (this.started) await this.started.catch(() => undefined);
    await drained;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots = [];
  }
}

function toWire(pending: readonly Pending[]): WireBatch {
  const count = pending.length;
  const profiles: CertificateProfile[] = [];
  const texts: Record<number, string> = {};
  const csrEnds = new Uint32Array(count);
  const profileIndex = new Uint16Array(count);
  const times = new Float64Array(2 * count);
  let size = 0;
  for (const { job } of pending) if (typeof job.csr !== "string") size += job.csr.length;
  const csrBytes = new Uint8Array(size);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const job = pending[i]!.job;
    if (typeof job.csr === "string") texts[i] = job.csr;
    else {
      csrBytes.set(job.csr, at);
      at += job.csr.length;
    }
    csrEnds[i] = at;
    let index = profiles.indexOf(job.profile);
    if (index < 0) index = profiles.push(job.profile) - 1;
    profileIndex[i] = index;
    times[2 * i] = job.validity.notBefore.getTime();
    times[2 * i + 1] = job.validity.notAfter.getTime();
  }
  return { csrBytes, csrEnds, texts, profileIndex, times, profiles };
}

function deliver(pending: readonly Pending[], results: WireResults): void {
  if (results.derEnds.length < pending.length) {
    for (const p of pending) p.reject(new PlatformError("INTERNAL", "signing worker returned fewer results than jobs"));
    return;
  }
  pending.forEach((p, i) => {
    const r = resultAt(results, i);
    if ("code" in r) p.reject(new PlatformError(asErrorCode(r.code, "INTERNAL"), r.message));
    else p.resolve({ der: r.der, pem: r.pem, serialHex: r.serialHex, notBefore: p.job.validity.notBefore, notAfter: p.job.validity.notAfter });
  });
}

/** The compiled worker next to this module, or the build output when running from TypeScript sources. */
export function resolveWorkerScript(): URL {
  return compiledScript(import.meta.url, "pool-worker.js", "signing pool worker");
}

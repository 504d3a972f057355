// SigningPool's worker slots: a worker thread started with the process's flags, and the CA and rules ids each one was sent.
import { Worker } from "node:worker_threads";
import { compiledScript } from "../compiled-script.js";
import type { PortableRules } from "./pool-rules.js";
import type { Pending } from "./signing-pool-types.js";
import { POOL_WORKER_KIND, type PoolWorkerData } from "./signing-pool-worker.js";
import type { ToWorker, WireCa } from "./signing-pool-wire.js";
import type { CaKeyPair } from "./types.js";

export interface Slot {
  readonly worker: Worker;
  readonly inFlight: Map<number, Pending[]>;
  /** CA and rules ids this worker was sent. */
  readonly cas: Set<number>;
  dead: boolean;
}

/** CAs kept loaded in the workers; a rotation beyond that drops the oldest. */
const MAX_CAS = 8;

/** The ids a pool gives its CAs and signers' rules, each sent once to a worker before the first batch that names it. */
export class WorkerIds {
  private readonly caIds = new WeakMap<CaKeyPair, number>();
  private readonly liveCas: { readonly id: number; readonly ca: CaKeyPair }[] = [];
  /** Rules by their portable form (one object per signer); ids shared with the CAs' so a worker's `forget` is unambiguous. */
  private readonly ruleIds = new WeakMap<PortableRules, number>();
  private nextCaId = 1;

  /** The id of a CA, sending it to the worker first when it has not seen it; `slots` are told to forget a dropped CA. */
  caId(slots: readonly Slot[], slot: Slot, ca: CaKeyPair): number {
    let id = this.caIds.get(ca);
    if (id === undefined) {
      id = this.nextCaId++;
      this.caIds.set(ca, id);
      this.liveCas.push({ id, ca });
      if (this.liveCas.length > MAX_CAS) {
        const old = this.liveCas.shift()!;
        this.caIds.delete(old.ca);
        for (const s of slots) if (s.cas.delete(old.id)) s.worker.postMessage({ type: "forget", id: old.id } satisfies ToWorker);
      }
    }
    if (!slot.cas.has(id)) {
      const { keySigner: _token, ...wire } = ca;
      slot.worker.postMessage({ type: "ca", id, ca: wire satisfies WireCa } satisfies ToWorker);
      slot.cas.add(id);
    }
    return id;
  }

  /** The id of a signer's rules, sending them to the worker first when it has not seen them. */
  ruleId(slot: Slot, rules: PortableRules): number {
    let id = this.ruleIds.get(rules);
    if (id === undefined) {
      id = this.nextCaId++;
      this.ruleIds.set(rules, id);
    }
    if (!slot.cas.has(id)) {
      slot.worker.postMessage({ type: "rules", id, rules } satisfies ToWorker);
      slot.cas.add(id);
    }
    return id;
  }
}

/**
 * A worker with the process's Node flags (source maps, profiling), less those a worker refuses: --input-type (a
 * process run with `node --input-type=module -e`; a worker loads a file) and per-process V8 flags such as
 * --single-threaded-gc, for which it starts with none.
 */
export function startWorker(script: string | URL, verifiedMemo: SharedArrayBuffer | undefined): Worker {
  const workerData: PoolWorkerData = { kind: POOL_WORKER_KIND, ...(verifiedMemo && { verifiedMemo }) };
  try {
    return new Worker(script, { workerData, execArgv: process.execArgv.filter((a) => !a.startsWith("--input-type")) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ERR_WORKER_INVALID_EXEC_ARGV") throw err;
    return new Worker(script, { workerData, execArgv: [] });
  }
}

/** The compiled worker next to this module, or the build output when running from TypeScript sources. */
export function workerScript(): URL {
  return compiledScript("src/pki/signing-pool-worker.js", "signing pool worker");
}

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
/** Signers' rules kept loaded in the workers; signers made anew beyond that (a policy reloaded) drop the oldest. */
const MAX_RULES = 16;

/**
 * The ids a pool gives its CAs and signers' rules, each sent once to a worker before the first batch that names it.
 * Ids come from one counter, so a worker's `forget` is unambiguous. The oldest beyond a bound is dropped: the workers
 * forget it once the batch being packed is sent (forgetDropped), since that batch may still name it, and it is sent
 * again under a new id when used later.
 */
export class WorkerIds {
  private readonly caIds = new WeakMap<CaKeyPair, number>();
  private readonly liveCas: { readonly id: number; readonly key: CaKeyPair }[] = [];
  /** Rules by their portable form (one object per signer). */
  private readonly ruleIds = new WeakMap<PortableRules, number>();
  private readonly liveRules: { readonly id: number; readonly key: PortableRules }[] = [];
  private dropped: number[] = [];
  private nextId = 1;

  /** The id of a CA, sending it to the worker first when it has not seen it. */
  caId(slot: Slot, ca: CaKeyPair): number {
    const id = this.idOf(this.caIds, this.liveCas, MAX_CAS, ca);
    if (!slot.cas.has(id)) {
      const { keySigner: _token, ...wire } = ca;
      slot.worker.postMessage({ type: "ca", id, ca: wire satisfies WireCa } satisfies ToWorker);
      slot.cas.add(id);
    }
    return id;
  }

  /** The id of a signer's rules, sending them to the worker first when it has not seen them. */
  ruleId(slot: Slot, rules: PortableRules): number {
    const id = this.idOf(this.ruleIds, this.liveRules, MAX_RULES, rules);
    if (!slot.cas.has(id)) {
      slot.worker.postMessage({ type: "rules", id, rules } satisfies ToWorker);
      slot.cas.add(id);
    }
    return id;
  }

  /** Tells every worker that holds an id dropped since the last call to forget it: after the packed batch is sent. */
  forgetDropped(slots: readonly Slot[]): void {
    for (const id of this.dropped) {
      for (const s of slots) if (s.cas.delete(id)) s.worker.postMessage({ type: "forget", id } satisfies ToWorker);
    }
    this.dropped = [];
  }

  private idOf<K extends object>(ids: WeakMap<K, number>, live: { readonly id: number; readonly key: K }[], max: number, key: K): number {
    let id = ids.get(key);
    if (id !== undefined) return id;
    id = this.nextId++;
    ids.set(key, id);
    live.push({ id, key });
    if (live.length > max) {
      const old = live.shift()!;
      ids.delete(old.key);
      this.dropped.push(old.id);
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

/** The compiled worker under the package's dist/ (also when this module runs from TypeScript sources or a bundle). */
export function workerScript(): URL {
  return compiledScript("src/pki/signing-pool-worker.js", "signing pool worker");
}

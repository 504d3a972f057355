// Node-agent CSRs through a running cluster, for bench:e2e and bench:soak: requests made before the clock, parallel
// creates, a watch that notes when each request was approved and issued, and the Event writes the controllers count.
import { isApproved, isIssued } from "../../src/api/conditions.js";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import type { ControllerResources } from "../../src/controller/controllers/controller-set.js";
import { Informer } from "../../src/controller/informer.js";
import { createPersistently, opsGet, sample, type Cluster } from "../controller/controllers/cluster.js";
import { newCsrObject } from "../fixtures/csr.js";
import { inParallel } from "../fixtures/parallel.js";

export interface Timeline {
  created?: number;
  approved?: number;
  issued?: number;
}

export interface Observer {
  /** By name: when this process first saw each request created (set by the caller), approved and issued. */
  readonly times: Map<string, Timeline>;
  readonly informer: Informer<CertificateSigningRequest>;
  /** Requests seen issued since the start. */
  issuedCount(): number;
  /** Requests the watch holds now (deletions taken out). */
  present(): number;
}

/** Watches every CSR and notes, by name, when the approval and the certificate were first seen (this process's clock). */
export function observe(c: Cluster): Observer {
  const times = new Map<string, Timeline>();
  let issued = 0;
  let present = 0;
  const informer = new Informer<CertificateSigningRequest>({ listWatcher: c.admin.csrs, name: "bench" });
  const seen = (csr: CertificateSigningRequest): void => {
    const t = times.get(csr.metadata.name!) ?? {};
    const now = performance.now();
    if (t.approved === undefined && isApproved(csr)) t.approved = now;
    if (t.issued === undefined && isIssued(csr)) {
      t.issued = now;
      issued++;
    }
    times.set(csr.metadata.name!, t);
  };
  informer.addHandlers({ onAdd: (csr) => (present++, seen(csr)), onUpdate: (_o, n) => seen(n), onDelete: () => void present-- });
  return { times, informer, issuedCount: () => issued, present: () => present };
}

/** Polls `done` every 20 ms; false once `limitMs` passed first. */
export async function waitFor(done: () => boolean, limitMs: number): Promise<boolean> {
  const until = Date.now() + limitMs;
  while (!done()) {
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** Requests are made before the clock starts, so making keys and CSRs is not measured. */
export async function prepare(c: Cluster, prefix: string, count: number): Promise<CertificateSigningRequest[]> {
  const out: CertificateSigningRequest[] = [];
  for (let i = 0; i < count; i++) {
    const name = `${prefix}-${i}`;
    out.push(await newCsrObject({ names: c.names, name, cn: `system:node:${name}`, o: ["system:nodes"] }));
  }
  return out;
}

/**
 * Creates every CSR from `clients` parallel callers; `who(i)` gives the identity of the i-th (and closes it after),
 * `onCreate` runs just before each request is sent, and `then` after it, before the caller's next (a node agent that
 * waits for its certificate).
 */
export function createAll(
  csrs: readonly CertificateSigningRequest[],
  clients: number,
  who: (i: number) => { readonly resources: ControllerResources; close?(): void },
  onCreate?: (csr: CertificateSigningRequest) => void,
  then?: (csr: CertificateSigningRequest) => Promise<unknown>,
): Promise<void> {
  return inParallel(csrs, clients, async (csr, i) => {
    onCreate?.(csr);
    const agent = who(i);
    try {
      await createPersistently(agent.resources, csr);
      await then?.(csr);
    } finally {
      agent.close?.();
    }
  });
}

export interface EventCounts {
  readonly written: number;
  readonly failed: number;
  readonly dropped: number;
  readonly throttled: number;
}

/** The controllers' metrics (their ops endpoint `ops`, read as the administrator of `c`). */
export async function controllerMetrics(c: Cluster, ops: string): Promise<string> {
  return (await opsGet(c.adminConfig, `${ops}/metrics`)).text;
}

/** The Event writes the controllers' metrics count so far, by result. */
export async function eventCounts(c: Cluster, ops: string): Promise<EventCounts> {
  const metrics = await controllerMetrics(c, ops);
  const of = (result: string) => sample(metrics, `platform_ca_events_total{result="${result}"}`);
  return { written: of("written"), failed: of("failed"), dropped: of("dropped"), throttled: of("throttled") };
}

/** Reads the Event counts every 100 ms until `done` says so or `limitMs` passed; the last counts read. */
export async function untilEvents(c: Cluster, ops: string, done: (counts: EventCounts) => boolean, limitMs: number): Promise<EventCounts> {
  const until = Date.now() + limitMs;
  let last = await eventCounts(c, ops);
  while (!done(last) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await eventCounts(c, ops);
  }
  return last;
}

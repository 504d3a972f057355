// bench:storage-backends — the storage contract's cost per backend in one run, rounds interleaved: creates/s of
// BENCH_CREATES objects by BENCH_CONCURRENCY callers, a CSR's three writes (create, approval, certificate) per object
// with this process's CPU per write, then the median LIST of BENCH_STORE_SIZE objects, on SQLite (the embedded
// default), a one-member etcd and a three-member etcd (loopback, Debian's /usr/bin/etcd), beside the in-memory store
// (nothing durable: the floor of the contract's own code, what no durable engine in this process can go under); and
// BENCH_CREATES Events written with a time to live of BENCH_TTL seconds (--event-ttl's way): creates/s, and how late
// and at what rate the backend deletes them once due.
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { csr, csrObject } from "../fixtures/csr.js";
import { startEtcd, type EtcdCluster } from "../fixtures/etcd.js";
import { envNumber, percentile } from "./measure.js";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { openEtcdStorage } from "../../src/apiserver/storage/etcd/store.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import type { Storage } from "../../src/apiserver/storage/types.js";

const CREATES = envNumber("BENCH_CREATES", 2000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const ROUNDS = envNumber("BENCH_ROUNDS", 2);
const STORE_SIZE = envNumber("BENCH_STORE_SIZE", 10_000);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 5);
const TTL = envNumber("BENCH_TTL", 5);
const EVENT_PREFIX = "/events.platform.io/events/default/";
const PREFIX = "/certificates.platform.io/certificatesigningrequests/";
/** The flows' objects, apart from the listed ones so the LIST reads BENCH_STORE_SIZE objects. */
const FLOW_PREFIX = "/certificates.platform.io/flows/";

type Backend = "memory" | "sqlite" | "etcd-1" | "etcd-3";

async function open(backend: Backend): Promise<{ storage: Storage; stop(): Promise<void> }> {
  if (backend === "memory") {
    const storage = new MemoryStorage();
    return { storage, stop: () => storage.close() };
  }
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "bench-backends-"));
    const storage = await openSqliteStorage({ path: join(dir, "store.db") });
    return { storage, stop: async () => (await storage.close(), rmSync(dir, { recursive: true, force: true })) };
  }
  const cluster: EtcdCluster = await startEtcd({ members: backend === "etcd-1" ? 1 : 3 });
  const storage = await openEtcdStorage({ endpoints: cluster.endpoints });
  return { storage, stop: async () => (await storage.close(), await cluster.stop()) };
}

/** `work(i)` for each i in [from, from + count) by CONCURRENCY callers: the seconds taken and this process's CPU (µs). */
async function byCallers(from: number, count: number, work: (i: number) => Promise<unknown>): Promise<{ seconds: number; cpuUs: number }> {
  let next = from;
  const end = from + count;
  const cpu = process.cpuUsage();
  const t = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    for (let i = next++; i < end; i = next++) await work(i);
  }));
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - t) / 1000, cpuUs: used.user + used.system };
}

/** `count` creates by CONCURRENCY callers; returns creates/s. */
async function creates(s: Storage, from: number, count: number, body: (name: string) => string): Promise<number> {
  const { seconds } = await byCallers(from, count, (i) => s.create(`${PREFIX}csr-${String(i).padStart(7, "0")}`, body(`csr-${i}`)));
  return count / seconds;
}

/**
 * A CSR's writes as the flow makes them, for `count` fresh objects by CONCURRENCY callers: the create, the approval and
 * the certificate, each update conditional on the revision the write before returned. Writes/s, and this process's CPU
 * (all threads: for SQLite the log flushes on libuv's pool too; an etcd's own work is in its processes) per write.
 */
async function flows(s: Storage, from: number, count: number, body: (name: string) => string): Promise<{ writesPerSecond: number; cpuUsPerWrite: number }> {
  const { seconds, cpuUs } = await byCallers(from, count, async (i) => {
    const key = `${FLOW_PREFIX}flow-${String(i).padStart(7, "0")}`;
    const created = await s.create(key, body(`flow-${i}`));
    const approved = await s.update(key, approvedBody(created.value), created.modRevision);
    await s.update(key, issuedBody(approved.value), approved.modRevision);
  });
  return { writesPerSecond: (3 * count) / seconds, cpuUsPerWrite: cpuUs / (3 * count) };
}

/** `text` with the end `pattern` matches replaced; a text of another shape fails the run rather than measure less. */
function withEnd(text: string, pattern: RegExp, replacement: string): string {
  const out = text.replace(pattern, replacement);
  if (out === text) throw new Error(`the stored text does not end as ${pattern} expects`);
  return out;
}

/** The stored text with an Approved condition, and then with a certificate-sized status.certificate. */
const approvedBody = (text: string) => withEnd(text, /}$/, ',"status":{"conditions":[{"type":"Approved","status":"True","reason":"AutoApproved","message":"Auto approving self kubelet client certificate after SubjectAccessReview.","lastUpdateTime":"2026-01-01T00:00:00Z"}]}}');
const issuedBody = (text: string) => withEnd(text, /]}}$/, `],"certificate":"${"Q".repeat(1400)}"}}`);

/**
 * CREATES Events written with a time to live by CONCURRENCY callers: creates/s, then, from a watch, how long after the
 * last one was due the last DELETE came (ms) and the deletes per second between the first and the last.
 */
async function expiring(s: Storage, body: (name: string) => string): Promise<{ createsPerSecond: number; lateMs: number; expiredPerSecond: number }> {
  const deleted: number[] = [];
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  const watch = s.watch(EVENT_PREFIX, { fromRevision: await s.revision() }, (ev) => {
    if (ev.type === "DELETE" && deleted.push(performance.now()) === CREATES) done();
  });
  try {
    const { seconds } = await byCallers(0, CREATES, (i) => s.create(`${EVENT_PREFIX}ev-${String(i).padStart(7, "0")}`, body(`ev-${i}`), TTL));
    const due = performance.now() + TTL * 1000;
    const timeout = setTimeout(() => done(), (TTL + 120) * 1000);
    await all;
    clearTimeout(timeout);
    if (deleted.length < CREATES) throw new Error(`${deleted.length} of ${CREATES} keys expired`);
    return { createsPerSecond: CREATES / seconds, lateMs: deleted.at(-1)! - due, expiredPerSecond: CREATES / ((deleted.at(-1)! - deleted[0]!) / 1000) };
  } finally {
    watch.cancel();
  }
}

interface RoundResult {
  readonly ttlCreatesPerSecond: number;
  readonly lateMs: number;
  readonly expiredPerSecond: number;
  readonly createsPerSecond: number;
  readonly writesPerSecond: number;
  readonly cpuUsPerWrite: number;
  readonly listMs: number;
}

async function round(backend: Backend, body: (name: string) => string): Promise<RoundResult> {
  const { storage, stop } = await open(backend);
  try {
    const createsPerSecond = await creates(storage, 0, CREATES, body);
    const { writesPerSecond, cpuUsPerWrite } = await flows(storage, 0, CREATES, body);
    await creates(storage, CREATES, Math.max(0, STORE_SIZE - CREATES), body);
    const times: number[] = [];
    for (let i = 0; i < LIST_RUNS; i++) {
      const t = performance.now();
      const page = await storage.list(PREFIX);
      times.push(performance.now() - t);
      if (page.items.length !== Math.max(CREATES, STORE_SIZE)) throw new Error(`${backend}: list is short`);
    }
    const ttl = await expiring(storage, body);
    return { createsPerSecond, writesPerSecond, cpuUsPerWrite, listMs: percentile(times, 50), ttlCreatesPerSecond: ttl.createsPerSecond, lateMs: ttl.lateMs, expiredPerSecond: ttl.expiredPerSecond };
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  const pem = (await csr({ cn: "system:node:bench", o: ["system:nodes"] })).pem;
  const body = (name: string) => JSON.stringify(csrObject({ name, request: pem, expirationSeconds: 86400 }));
  const backends: Backend[] = ["memory", "sqlite", "etcd-1", "etcd-3"];
  const results = new Map<Backend, RoundResult[]>(backends.map((b) => [b, []]));
  const load = loadavg()[0]!.toFixed(1);
  for (let i = 0; i < ROUNDS; i++) for (const b of backends) results.get(b)!.push(await round(b, body));
  const median = (xs: number[]) => percentile(xs, 50);
  const sqlite = median(results.get("sqlite")!.map((r) => r.createsPerSecond));
  const summary = Object.fromEntries([...results].map(([b, rs]) => {
    const cps = median(rs.map((r) => r.createsPerSecond));
    return [b, {
      createsPerSecond: Math.round(cps),
      vsSqlite: Math.round((cps / sqlite) * 100) / 100,
      csrWritesPerSecond: Math.round(median(rs.map((r) => r.writesPerSecond))),
      cpuUsPerCsrWrite: Math.round(median(rs.map((r) => r.cpuUsPerWrite)) * 10) / 10,
      [`list${STORE_SIZE}Ms`]: Math.round(median(rs.map((r) => r.listMs))),
      [`ttl${TTL}sCreatesPerSecond`]: Math.round(median(rs.map((r) => r.ttlCreatesPerSecond))),
      expiredLastAfterDueMs: Math.round(median(rs.map((r) => r.lateMs))),
      expiredPerSecond: Math.round(median(rs.map((r) => r.expiredPerSecond))),
      rounds: rs.map((r) => Math.round(r.createsPerSecond)),
    }];
  }));
  const machine = `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}, node ${process.version}, load average ${load} at start`;
  process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), machine, creates: CREATES, concurrency: CONCURRENCY, storeSize: STORE_SIZE, ttlSeconds: TTL, ...summary }, null, 2)}\n`);
}

await main();

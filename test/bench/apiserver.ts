// bench:apiserver — the embedded API server as a real process on durable SQLite, as users run it (HTTPS, client
// certificate authentication, RBAC deciding as a system:nodes identity), with `--insecure-local` as the extra row:
// creates/s of distinct CSRs (the verified-CSR memo never hits) and the server's CPU per create, an unpaged LIST of
// everything created, and watch fan-out latency (write acknowledged → event at each of N watchers). The two servers
// are measured in alternating rounds so that the machine's other load falls on both alike. BENCH_ETCD=1 adds the secure
// server on a one-member etcd (Debian's /usr/bin/etcd on loopback) as a third row.
import { cpus } from "node:os";
import { startEtcd } from "../fixtures/etcd.js";
import { createAll, insecureTarget, secureTarget, timedCreates, type ApiTarget } from "./api-target.js";
import { distinctCsrPems } from "./identity.js";
import { cpuSeconds, envNumber, percentile } from "./measure.js";
import { openWatchers, type WatcherSet } from "./watchers.js";

const ROUNDS = envNumber("BENCH_ROUNDS", 5);
const CREATES = envNumber("BENCH_CREATES", 5000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 10);
const WATCHERS = envNumber("BENCH_WATCHERS", 100);
const FANOUT_WRITES = envNumber("BENCH_FANOUT_WRITES", 200);
const ETCD = process.env.BENCH_ETCD === "1";

/** The secure server with its objects in a one-member etcd started for it (and stopped after it). */
async function etcdTarget(concurrency: number): Promise<ApiTarget> {
  const etcd = await startEtcd();
  return secureTarget(concurrency, "bench", { apiserverArgs: ["--etcd-servers", etcd.endpoints[0]!], name: "TLS + client certificate + RBAC, one-member etcd", stopped: () => etcd.stop() });
}

interface Measured {
  readonly target: ApiTarget;
  readonly watchers: WatcherSet;
  createSeconds: number;
  createCpu: number;
  creates: number;
  readonly listTimes: number[];
  listCpu: number;
  listItems: number;
  listBytes: number;
  readonly latencies: number[];
}

interface Row {
  readonly name: string;
  readonly createsPerSecond: number;
  readonly createCpuMicros: number;
  readonly listMs: number;
  readonly listCpuMs: number;
  readonly listItems: number;
  readonly listMiB: number;
  readonly fanoutP50: number;
  readonly fanoutP99: number;
}

const perRound = (total: number) => Math.ceil(total / ROUNDS);

async function round(m: Measured, r: number, pems: string[]): Promise<void> {
  const { target } = m;
  const creates = pems.splice(0, perRound(CREATES)).map((pem, i) => target.body(`create-${r}-${i}`, pem, "create"));
  const timed = await timedCreates(target, creates, CONCURRENCY);
  m.createSeconds += timed.seconds;
  m.createCpu += timed.cpu;
  m.creates += creates.length;

  for (const [i, pem] of pems.splice(0, perRound(FANOUT_WRITES)).entries()) {
    const name = `fanout-${r}-${i}`;
    await createAll(target, [target.body(name, pem, "fanout")], 1);
    const ack = performance.now();
    for (const at of await m.watchers.arrivals(name, WATCHERS)) m.latencies.push(Math.max(0, at - ack));
  }
}

/** Unpaged LISTs of the whole collection (full JSON), once everything is created. */
async function lists(m: Measured): Promise<void> {
  const cpu = cpuSeconds(m.target.pid());
  for (let i = 0; i < perRound(LIST_RUNS); i++) {
    const t = performance.now();
    const r = await m.target.call("GET", m.target.path);
    m.listTimes.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`list answered ${r.status}`);
    m.listItems = (JSON.parse(r.text) as { items: unknown[] }).items.length;
    m.listBytes = r.text.length;
  }
  m.listCpu += cpuSeconds(m.target.pid()) - cpu;
}

const all: Measured[] = [];
try {
  // Every CSR of the run, distinct, made before any clock starts.
  const servers = ETCD ? 3 : 2;
  const pems = await distinctCsrPems(servers * ROUNDS * (perRound(CREATES) + perRound(FANOUT_WRITES)) + servers, "bench");
  for (const target of [await secureTarget(CONCURRENCY), await insecureTarget(CONCURRENCY), ...(ETCD ? [await etcdTarget(CONCURRENCY)] : [])]) {
    const watchers = await openWatchers({ base: target.base, path: target.path, selector: "batch=fanout", count: WATCHERS, secureContext: target.secureContext });
    // The first event proves every watcher is live (and the watch cache loaded); not a fan-out figure.
    await createAll(target, [target.body("fanout-ready", pems.pop()!, "fanout")], 1);
    await watchers.arrivals("fanout-ready", WATCHERS);
    all.push({ target, watchers, createSeconds: 0, createCpu: 0, creates: 0, listTimes: [], listCpu: 0, listItems: 0, listBytes: 0, latencies: [] });
  }
  for (let r = 0; r < ROUNDS; r++) for (const m of all) await round(m, r, pems);
  for (let r = 0; r < ROUNDS; r++) for (const m of all) await lists(m);

  const rows: Row[] = all.map((m) => ({
    name: m.target.name,
    createsPerSecond: m.creates / m.createSeconds,
    createCpuMicros: (m.createCpu * 1e6) / m.creates,
    listMs: percentile(m.listTimes, 50),
    listCpuMs: (m.listCpu * 1e3) / m.listTimes.length,
    listItems: m.listItems,
    listMiB: m.listBytes / 2 ** 20,
    fanoutP50: percentile(m.latencies, 50),
    fanoutP99: percentile(m.latencies, 99),
  }));
  const [secure, insecure] = rows as [Row, Row];
  console.log(`bench:apiserver — ${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}`);
  console.log(`${ROUNDS} alternating rounds · ${CREATES} distinct CSR creates × ${CONCURRENCY} callers · unpaged LIST × ${LIST_RUNS} · ${WATCHERS} watchers × ${FANOUT_WRITES} writes`);
  console.log("| server | creates/s | server CPU µs/create | LIST all: items, MiB | LIST median ms | LIST server CPU ms | fan-out p50 / p99 ms |");
  console.log("|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(`| ${r.name} | ${r.createsPerSecond.toFixed(0)} | ${r.createCpuMicros.toFixed(0)} | ${r.listItems}, ${r.listMiB.toFixed(1)} | ${r.listMs.toFixed(0)} | ${r.listCpuMs.toFixed(0)} | ${r.fanoutP50.toFixed(1)} / ${r.fanoutP99.toFixed(1)} |`);
  }
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  console.log(
    `| secure ÷ insecure | ${x(secure.createsPerSecond, insecure.createsPerSecond)} | ${x(secure.createCpuMicros, insecure.createCpuMicros)} | | ${x(secure.listMs, insecure.listMs)} | ${x(secure.listCpuMs, insecure.listCpuMs)} | ${x(secure.fanoutP50, insecure.fanoutP50)} / ${x(secure.fanoutP99, insecure.fanoutP99)} |`,
  );
} finally {
  for (const m of all) {
    m.watchers.close();
    await m.target.stop();
  }
}

// bench:growth — whether a request costs the same with 10k, 100k and 300k CSRs stored: `platform-ca apiserver` with
// TLS, client-certificate authentication and RBAC (a system:nodes identity, not system:masters), durable SQLite.
// One server per level, filled directly through the storage layer while it is down (the HTTP path is what is
// measured), then measured in rounds that alternate between the levels: creates/s of distinct CSRs and the server's
// CPU per create, first-page LIST (limit=500) CPU, watch fan-out latency (write acknowledged → event at each of N
// watchers) and server RSS.
import { randomUUID } from "node:crypto";
import { cpus } from "node:os";
import { join } from "node:path";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { STORE_FILE } from "../../src/apiserver/bootstrap/store.js";
import { createAll, secureTarget, timedCreates, type ApiTarget } from "./api-target.js";
import { distinctCsrPems } from "./identity.js";
import { cpuSeconds, envNumber, memoryMiB, percentile } from "./measure.js";
import { openWatchers, type WatcherSet } from "./watchers.js";

const LEVELS = (process.env.BENCH_LEVELS ?? "10000,100000,300000").split(",").map(Number);
const ROUNDS = envNumber("BENCH_ROUNDS", 10);
const CREATES = envNumber("BENCH_CREATES", 3000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 100);
const WATCHERS = envNumber("BENCH_WATCHERS", 50);
const FANOUT_WRITES = envNumber("BENCH_FANOUT_WRITES", 100);

/** One server holding one level of stored CSRs, and what was measured on it so far. */
interface Level {
  readonly stored: number;
  readonly target: ApiTarget;
  readonly watchers: WatcherSet;
  createSeconds: number;
  createCpu: number;
  creates: number;
  listCpu: number;
  lists: number;
  readonly listTimes: number[];
  readonly latencies: number[];
}

/** A server with `stored` CSRs: one created through the API, the rest its stored text under other names. */
async function setUp(stored: number, pems: string[]): Promise<Level> {
  const target = await secureTarget(CONCURRENCY, "growth");
  const cluster = target.cluster!;
  await createAll(target, [target.body("sample", pems.pop()!, "sample")], 1);
  const sample = JSON.parse((await target.call("GET", `${target.path}/sample`)).text) as { metadata: Record<string, unknown> };
  delete sample.metadata.resourceVersion;
  const prefix = `/${cluster.names.certificates}/certificatesigningrequests/`;
  await cluster.restartApiserver(0, async () => {
    const storage = await openSqliteStorage({ path: join(cluster.dataDir, STORE_FILE) });
    const writes: Promise<unknown>[] = [];
    for (let i = 1; i < stored; i++) {
      const name = `seed-${String(i).padStart(7, "0")}`;
      writes.push(storage.create(prefix + name, JSON.stringify({ ...sample, metadata: { ...sample.metadata, name, uid: randomUUID() } })));
      if (writes.length === 4096) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    await storage.close();
  });
  // Watchers of the fan-out label; opening them loads the watch cache, which a first write proves live.
  const watchers = await openWatchers({ base: target.base, path: target.path, selector: "batch=fanout", count: WATCHERS, secureContext: target.secureContext });
  await createAll(target, [target.body("fanout-ready", pems.pop()!, "fanout")], 1);
  await watchers.arrivals("fanout-ready", WATCHERS);
  return { stored, target, watchers, createSeconds: 0, createCpu: 0, creates: 0, listCpu: 0, lists: 0, listTimes: [], latencies: [] };
}

/** One round on one level: a share of the creates, of the LIST pages and of the fan-out writes. */
async function round(level: Level, r: number, pems: string[]): Promise<void> {
  const { target } = level;
  const creates = pems.splice(0, Math.ceil(CREATES / ROUNDS)).map((pem, i) => target.body(`create-${r}-${i}`, pem, "create"));
  const timed = await timedCreates(target, creates, CONCURRENCY);
  level.createSeconds += timed.seconds;
  level.createCpu += timed.cpu;
  level.creates += creates.length;

  const cpu = cpuSeconds(target.pid());
  for (let i = 0; i < Math.ceil(LIST_RUNS / ROUNDS); i++, level.lists++) {
    const t0 = performance.now();
    const res = await target.call("GET", `${target.path}?limit=500`);
    level.listTimes.push(performance.now() - t0);
    const page = JSON.parse(res.text) as { items: unknown[] };
    if (res.status !== 200 || page.items.length !== 500) throw new Error(`list answered ${res.status} with ${page.items?.length} items`);
  }
  level.listCpu += cpuSeconds(target.pid()) - cpu;

  for (const [i, pem] of pems.splice(0, Math.ceil(FANOUT_WRITES / ROUNDS)).entries()) {
    const name = `fanout-${r}-${i}`;
    await createAll(target, [target.body(name, pem, "fanout")], 1);
    const ack = performance.now();
    for (const at of await level.watchers.arrivals(name, WATCHERS)) level.latencies.push(Math.max(0, at - ack));
  }
}

const levels: Level[] = [];
try {
  // Every CSR this run sends through the API, made before any clock starts.
  const perLevel = ROUNDS * (Math.ceil(CREATES / ROUNDS) + Math.ceil(FANOUT_WRITES / ROUNDS)) + 2;
  const pems = await distinctCsrPems(LEVELS.length * perLevel, "growth");
  for (const stored of LEVELS) levels.push(await setUp(stored, pems));
  // Rounds alternate between the levels, so the machine's other load falls on all of them alike.
  for (let r = 0; r < ROUNDS; r++) for (const level of levels) await round(level, r, pems);
  const rows = levels.map((l) => ({
    stored: l.stored,
    createsPerSecond: l.creates / l.createSeconds,
    createCpuMicros: (l.createCpu * 1e6) / l.creates,
    listCpuMicros: (l.listCpu * 1e6) / l.lists,
    listMedianMs: percentile(l.listTimes, 50),
    fanoutP50Ms: percentile(l.latencies, 50),
    fanoutP99Ms: percentile(l.latencies, 99),
    rssMiB: memoryMiB(l.target.pid(), "VmRSS"),
  }));
  const base = rows[0]!;
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  console.log(`bench:growth — ${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}`);
  console.log(
    `TLS + client certificate (system:nodes, RBAC) · ${ROUNDS} interleaved rounds · ${CREATES} distinct creates × ${CONCURRENCY} callers · LIST limit=500 × ${LIST_RUNS} · ${WATCHERS} watchers × ${FANOUT_WRITES} writes`,
  );
  console.log("| stored | creates/s | server CPU µs/create | LIST page CPU µs | LIST page median ms | fan-out p50 / p99 ms | server RSS MiB | creates/s ÷ first | create CPU ÷ first | LIST CPU ÷ first |");
  console.log("|---|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.stored.toLocaleString("en")} | ${r.createsPerSecond.toFixed(0)} | ${r.createCpuMicros.toFixed(0)} | ${r.listCpuMicros.toFixed(0)} | ${r.listMedianMs.toFixed(1)} | ${r.fanoutP50Ms.toFixed(1)} / ${r.fanoutP99Ms.toFixed(1)} | ${r.rssMiB.toFixed(0)} | ${ratio(r.createsPerSecond, base.createsPerSecond)} | ${ratio(r.createCpuMicros, base.createCpuMicros)} | ${ratio(r.listCpuMicros, base.listCpuMicros)} |`,
    );
  }
} finally {
  for (const l of levels) {
    l.watchers.close();
    await l.target.stop();
  }
}

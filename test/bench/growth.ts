// bench:growth — whether a request costs the same with 10k, 100k and 300k CSRs stored: `platform-ca apiserver` with
// TLS, client-certificate authentication and RBAC (a system:nodes identity, not system:masters), durable SQLite.
// At each level: creates/s of distinct CSRs and the server's CPU per create, first-page LIST (limit=500) CPU, watch
// fan-out latency (write acknowledged → event at each of N watchers) and server RSS. The store is filled between
// levels directly through the storage layer while the server is down (the HTTP path is what is measured).
import { randomUUID } from "node:crypto";
import https from "node:https";
import { cpus } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { STORE_FILE } from "../../src/apiserver/bootstrap/store.js";
import { startCluster } from "../controller/controllers/cluster.js";
import { csrObject } from "../fixtures/csr.js";
import { distinctCsrPems, nodeClientTls } from "./identity.js";
import { httpCall } from "./insecure-server.js";
import { cpuSeconds, envNumber, memoryMiB, percentile } from "./measure.js";
import { openWatchers } from "./watchers.js";

const LEVELS = (process.env.BENCH_LEVELS ?? "10000,100000,300000").split(",").map(Number);
const CREATES = envNumber("BENCH_CREATES", 3000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 40);
const WATCHERS = envNumber("BENCH_WATCHERS", 50);
const FANOUT_WRITES = envNumber("BENCH_FANOUT_WRITES", 100);

interface Row {
  readonly stored: number;
  readonly createsPerSecond: number;
  readonly createCpuMicros: number;
  readonly listCpuMicros: number;
  readonly listMedianMs: number;
  readonly fanoutP50Ms: number;
  readonly fanoutP99Ms: number;
  readonly rssMiB: number;
}

const c = await startCluster();
const path = `/apis/${c.names.certificates}/v1/certificatesigningrequests`;
const prefix = `/${c.names.certificates}/certificatesigningrequests/`;
const tls = await nodeClientTls(c.dataDir, "growth");
const secureContext = createSecureContext(tls);
const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, secureContext });
const call = (method: string, p: string, body?: string) => httpCall(agent as never, c.address, method, p, body);
const body = (name: string, pem: string, batch: string) =>
  JSON.stringify(csrObject({ names: c.names, name, metadata: { labels: { batch } }, request: pem, expirationSeconds: 86400 }));

/** Creates through the API, `CONCURRENCY` callers; throws on anything but 201. */
async function createAll(bodies: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < bodies.length; i = next++) {
      const r = await call("POST", path, bodies[i]);
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

try {
  // Every CSR this run sends through the API, made before any clock starts.
  const pems = await distinctCsrPems(LEVELS.length * (CREATES + FANOUT_WRITES) + 1, "growth");
  await createAll([body("sample", pems.pop()!, "sample")]);
  const sample = JSON.parse((await call("GET", `${path}/sample`)).text) as { metadata: Record<string, unknown> };
  delete sample.metadata.resourceVersion;
  let stored = 1;
  let seeded = 0;
  const rows: Row[] = [];
  for (const [level, target] of LEVELS.entries()) {
    if (stored < target) {
      // The stored text of a CSR the server created, under other names: what a grown cluster holds.
      await c.restartApiserver(0, async () => {
        const storage = await openSqliteStorage({ path: join(c.dataDir, STORE_FILE) });
        const writes: Promise<unknown>[] = [];
        for (; stored < target; stored++, seeded++) {
          const name = `seed-${String(seeded).padStart(7, "0")}`;
          writes.push(storage.create(prefix + name, JSON.stringify({ ...sample, metadata: { ...sample.metadata, name, uid: randomUUID() } })));
          if (writes.length === 4096) await Promise.all(writes.splice(0));
        }
        await Promise.all(writes);
        await storage.close();
      });
    }
    const pid = c.apiserver.child.pid!;
    // Watchers of this level's fan-out label; opening them loads the watch cache, which the first write proves live.
    const fanout = `fanout-${level}`;
    const watchers = await openWatchers({ base: c.address, path, selector: `batch=${fanout}`, count: WATCHERS, secureContext });
    const fanoutBodies = pems.splice(0, FANOUT_WRITES).map((pem, i) => body(`${fanout}-${i}`, pem, fanout));
    const latencies: number[] = [];
    for (const [i, b] of fanoutBodies.entries()) {
      await createAll([b]);
      const ack = performance.now();
      const arrivals = await watchers.arrivals(`${fanout}-${i}`, WATCHERS);
      // The first write also waited for the cache to load: not a fan-out figure.
      if (i > 0) for (const at of arrivals) latencies.push(Math.max(0, at - ack));
    }
    stored += FANOUT_WRITES;

    const createBodies = pems.splice(0, CREATES).map((pem, i) => body(`create-${level}-${i}`, pem, "create"));
    let cpu = cpuSeconds(pid);
    const t = performance.now();
    await createAll(createBodies);
    const createSeconds = (performance.now() - t) / 1000;
    const createCpu = cpuSeconds(pid) - cpu;
    stored += CREATES;

    const listTimes: number[] = [];
    cpu = cpuSeconds(pid);
    for (let i = 0; i < LIST_RUNS; i++) {
      const t0 = performance.now();
      const r = await call("GET", `${path}?limit=500`);
      listTimes.push(performance.now() - t0);
      const page = JSON.parse(r.text) as { items: unknown[]; metadata: { remainingItemCount?: number } };
      if (r.status !== 200 || page.items.length !== 500) throw new Error(`list answered ${r.status} with ${page.items?.length} items`);
    }
    const listCpu = cpuSeconds(pid) - cpu;
    watchers.close();
    rows.push({
      stored: target,
      createsPerSecond: CREATES / createSeconds,
      createCpuMicros: (createCpu * 1e6) / CREATES,
      listCpuMicros: (listCpu * 1e6) / LIST_RUNS,
      listMedianMs: percentile(listTimes, 50),
      fanoutP50Ms: percentile(latencies, 50),
      fanoutP99Ms: percentile(latencies, 99),
      rssMiB: memoryMiB(pid, "VmRSS"),
    });
  }
  const base = rows[0]!;
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  console.log(`bench:growth — ${new Date().toISOString()}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}`);
  console.log(`TLS + client certificate (system:nodes, RBAC) · ${CREATES} distinct creates × ${CONCURRENCY} callers · LIST limit=500 × ${LIST_RUNS} · ${WATCHERS} watchers × ${FANOUT_WRITES} writes`);
  console.log("| stored | creates/s | server CPU µs/create | LIST page CPU µs | LIST page median ms | fan-out p50 / p99 ms | server RSS MiB | creates/s ÷ first | LIST CPU ÷ first |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.stored.toLocaleString("en")} | ${r.createsPerSecond.toFixed(0)} | ${r.createCpuMicros.toFixed(0)} | ${r.listCpuMicros.toFixed(0)} | ${r.listMedianMs.toFixed(1)} | ${r.fanoutP50Ms.toFixed(1)} / ${r.fanoutP99Ms.toFixed(1)} | ${r.rssMiB.toFixed(0)} | ${ratio(r.createsPerSecond, base.createsPerSecond)} | ${ratio(r.listCpuMicros, base.listCpuMicros)} |`,
    );
  }
} finally {
  agent.destroy();
  await c.stop();
}

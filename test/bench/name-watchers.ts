// bench:name-watchers — what a CSR create costs `platform-ca apiserver` while many node agents each wait for their own
// CSR (a watch with fieldSelector=metadata.name=<its CSR>, as upstream's kubelet waits for its certificate): the
// server's CPU per create and the create→event latency at the one watcher of that CSR, with 0, 1,000 and 4,000 such
// watchers open, the levels alternated in rounds; and what starting one costs the server (its LIST with the field
// selector, then its watch), with every CSR of the earlier rounds stored. TLS, client certificates and RBAC (a
// system:nodes identity); after the levels, the same run's peer of a start (start-peer.ts).
import { join } from "node:path";
import { secureTarget, timedCreates } from "./api-target.js";
import { distinctCsrPems } from "./identity.js";
import { cpuSeconds, envNumber, percentile } from "./measure.js";
import { startPeer } from "./start-peer.js";
import { openWatchers, STARTING } from "./watchers.js";

const LEVELS = (process.env.BENCH_LEVELS ?? "0,1000,4000").split(",").map(Number);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CREATES = envNumber("BENCH_CREATES", Math.max(2000, ...LEVELS));
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);

const target = await secureTarget(CONCURRENCY, "watchers");
try {
  const pems = await distinctCsrPems(CREATES * LEVELS.length * (ROUNDS + 1), "nw");
  const results = new Map<number, { cpu: number[]; rate: number[]; latency: number[]; start: number[] }>(LEVELS.map((w) => [w, { cpu: [], rate: [], latency: [], start: [] }]));
  let stored = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    for (const watchers of LEVELS) {
      // Round 0 is unmeasured: every level has then run once (code optimised, the watch cache loaded).
      const names = Array.from({ length: CREATES }, (_, i) => `nw-${round}-${watchers}-${i}`);
      const startCpu = cpuSeconds(target.pid());
      const set = await openWatchers({ base: target.base, path: target.path, selector: "", count: watchers, names: names.slice(0, watchers), secureContext: target.secureContext! });
      const startMicros = watchers > 0 ? ((cpuSeconds(target.pid()) - startCpu) * 1e6) / watchers : NaN;
      const bodies = names.map((name) => target.body(name, pems.pop()!, "name-watchers"));
      const acked = new Map<string, number>();
      const call = target.call;
      // The acknowledgement time of each create, for the latency to its watcher.
      const timed = { ...target, call: async (method: string, path: string, body?: string) => {
        const r = await call(method, path, body);
        acked.set(/"name":"([^"]+)"/.exec(r.text)?.[1] ?? "", performance.now());
        return r;
      } };
      const { seconds, cpu } = await timedCreates(timed, bodies, CONCURRENCY);
      const latencies = await Promise.all(names.slice(0, watchers).map(async (name) => (await set.arrivals(name, 1))[0]! - acked.get(name)!));
      set.close();
      if (round === 0) continue;
      const r = results.get(watchers)!;
      r.cpu.push((cpu * 1e6) / CREATES);
      r.rate.push(CREATES / seconds);
      r.latency.push(...latencies);
      if (watchers > 0) r.start.push(startMicros);
    }
    stored += CREATES * LEVELS.length;
  }
  // The same run's floor of a start: its two TLS connections and requests to a bare node server (BENCH_PEER=0 skips it).
  const startWatchers = Math.max(...LEVELS);
  const pki = join(target.cluster!.dataDir, "pki");
  const peer = process.env.BENCH_PEER === "0" || startWatchers === 0
    ? NaN
    : await startPeer({ certFile: join(pki, "apiserver.crt"), keyFile: join(pki, "apiserver.key"), clientCaFile: join(pki, "ca.crt"), secureContext: target.secureContext!, starts: startWatchers, concurrency: STARTING });
  console.log(`bench:name-watchers — ${new Date().toISOString()}, node ${process.version}, ${CREATES} creates per level and round, ${ROUNDS} rounds (medians), ${CONCURRENCY} callers`);
  console.log(`each node agent starts as an informer: a LIST with its field selector, then a watch from that revision (${stored.toLocaleString("en-US")} CSRs stored at the end)`);
  console.log("| name watchers open | creates/s | server CPU µs/create | ÷ no watchers | create→event at its watcher p50 / p99 ms | server CPU µs per node agent's LIST + watch start |");
  console.log("|---|---|---|---|---|---|");
  const base = percentile(results.get(LEVELS[0]!)!.cpu, 50);
  for (const w of LEVELS) {
    const r = results.get(w)!;
    const cpu = percentile(r.cpu, 50);
    const lat = r.latency.length > 0 ? `${percentile(r.latency, 50).toFixed(1)} / ${percentile(r.latency, 99).toFixed(1)}` : "—";
    const start = r.start.length > 0 ? percentile(r.start, 50).toFixed(0) : "—";
    console.log(`| ${w.toLocaleString("en-US")} | ${percentile(r.rate, 50).toFixed(0)} | ${cpu.toFixed(0)} | ${(cpu / base).toFixed(2)}× | ${lat} | ${start} |`);
  }
  if (!Number.isNaN(peer)) {
    const start = percentile(results.get(startWatchers)!.start, 50);
    console.log(`transport peer, same run: a bare node HTTPS server with the API server's certificates, ${startWatchers.toLocaleString("en-US")} starts of two connections with the client certificate (a GET answered, a watch held open): ${peer.toFixed(0)} µs of its CPU per start; a node agent's start costs ${(start / peer).toFixed(2)}× that`);
  }
} finally {
  await target.stop();
}

// bench:apiserver — the embedded API server as a real process on durable SQLite, driven over loopback HTTP with keep-alive:
// CSR creates/s, LIST of 10,000 CSRs, watch fan-out latency to 100 watchers, and server RSS with 100,000 CSRs stored.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { groupNames } from "../../src/api/group.js";
import { openSqliteStorage } from "../../src/apiserver/storage/sqlite.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { memoryMiB, percentile, envNumber } from "./measure.js";
import { httpCall, startServer, stopServer } from "./insecure-server.js";

const CREATES = envNumber("BENCH_CREATES", 2000);
const CONCURRENCY = envNumber("BENCH_CONCURRENCY", 16);
const LIST_SIZE = envNumber("BENCH_LIST_SIZE", 10_000);
const LIST_RUNS = envNumber("BENCH_LIST_RUNS", 10);
const WATCHERS = envNumber("BENCH_WATCHERS", 100);
const FANOUT_WRITES = envNumber("BENCH_FANOUT_WRITES", 200);
const RSS_SIZE = envNumber("BENCH_RSS_SIZE", 100_000);

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const http = (base: string, method: string, path: string, body?: string) => httpCall(agent, base, method, path, body);

const rssMiB = (pid: number): number => Math.round(memoryMiB(pid, "VmRSS"));

const CSR_PATH = "/apis/certificates.platform.io/v1/certificatesigningrequests";

async function main(): Promise<void> {
  const pem = (await csr({ cn: "system:node:bench", o: ["system:nodes"] })).pem;
  const body = (name: string) => JSON.stringify(csrObject({ name, metadata: { labels: { bench: "yes", batch: name.slice(0, 6) } }, request: pem, expirationSeconds: 86400 }));
  const dataDir = mkdtempSync(join(tmpdir(), "bench-apiserver-"));
  const started = await startServer(dataDir);
  let child = started.child;
  const base = started.base;
  let stored = 0;
  const populate = async (until: number, prefix: string) => {
    let next = stored;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= until) return;
        const r = await http(base, "POST", CSR_PATH, body(`${prefix}-${String(i).padStart(7, "0")}`));
        if (r.status !== 201) throw new Error(`create answered ${r.status}: ${r.text}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    stored = until;
  };
  try {
    // 1. Creates per second, durable, concurrent clients.
    let t = performance.now();
    await populate(CREATES, "create");
    const createsPerSecond = CREATES / ((performance.now() - t) / 1000);

    // 2. LIST of LIST_SIZE CSRs, full JSON.
    await populate(LIST_SIZE, "create");
    const listTimes: number[] = [];
    let listBytes = 0;
    for (let i = 0; i < LIST_RUNS; i++) {
      t = performance.now();
      const r = await http(base, "GET", CSR_PATH);
      listTimes.push(performance.now() - t);
      listBytes = r.text.length;
      const count = (JSON.parse(r.text) as { items: unknown[] }).items.length;
      if (count !== LIST_SIZE) throw new Error(`list returned ${count} items`);
    }
    listTimes.sort((a, b) => a - b);

    // 3. Watch fan-out: WATCHERS streams; latency from each write's acknowledgement to each watcher's receipt.
    const rv = JSON.parse((await http(base, "GET", `${CSR_PATH}?limit=1`)).text).metadata.resourceVersion as string;
    const received = new Map<string, number[]>();
    const watchAgent = new Agent({ keepAlive: false, maxSockets: WATCHERS + 1 });
    const watches = await Promise.all(
      Array.from({ length: WATCHERS }, () =>
        new Promise<ReturnType<typeof request>>((resolve, reject) => {
          const req = request(`${base}${CSR_PATH}?watch=1&resourceVersion=${rv}&labelSelector=batch%3Dfanout`, { agent: watchAgent }, (res) => {
            let buf = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => {
              const at = performance.now();
              buf += chunk;
              let nl: number;
              while ((nl = buf.indexOf("\n")) >= 0) {
                const name = /"name":"([^"]+)"/.exec(buf.slice(0, nl))?.[1];
                buf = buf.slice(nl + 1);
                if (name) (received.get(name) ?? received.set(name, []).get(name)!).push(at);
              }
            });
            resolve(req);
          });
          req.on("error", reject);
          req.end();
        }),
      ),
    );
    const latencies: number[] = [];
    for (let i = 0; i < FANOUT_WRITES; i++) {
      const name = `fanout-${String(i).padStart(7, "0")}`;
      const r = await http(base, "POST", CSR_PATH, body(name));
      const ack = performance.now();
      if (r.status !== 201) throw new Error(`fan-out create answered ${r.status}`);
      for (let wait = 0; (received.get(name)?.length ?? 0) < WATCHERS && wait < 2000; wait++) await new Promise((res) => setTimeout(res, 1));
      const got = received.get(name) ?? [];
      if (got.length < WATCHERS) throw new Error(`only ${got.length} of ${WATCHERS} watchers saw ${name}`);
      for (const at of got) latencies.push(Math.max(0, at - ack));
    }
    for (const w of watches) w.destroy();
    stored += FANOUT_WRITES;
    latencies.sort((a, b) => a - b);

    // 4. RSS with RSS_SIZE CSRs stored. The store is filled directly (the HTTP path was measured above), with the
    // exact text the server stored for an object it created, then the server restarts on it.
    const sample = JSON.parse((await http(base, "GET", `${CSR_PATH}/create-0000000`)).text) as { metadata: Record<string, unknown> };
    delete sample.metadata.resourceVersion;
    await stopServer(child);
    const storage = await openSqliteStorage({ path: join(dataDir, "store.db") });
    const prefix = `/${groupNames().certificates}/certificatesigningrequests/`;
    for (let i = stored; i < RSS_SIZE; i++) {
      const name = `rss-${String(i).padStart(7, "0")}`;
      await storage.create(prefix + name, JSON.stringify({ ...sample, metadata: { ...sample.metadata, name, uid: randomUUID() } }));
    }
    await storage.close();
    const restarted = await startServer(dataDir);
    child = restarted.child;
    const rssIdle = rssMiB(child.pid!);
    // A watch loads the resource's watch cache (every object's text in memory).
    const rv2 = JSON.parse((await http(restarted.base, "GET", `${CSR_PATH}?limit=1`)).text).metadata.resourceVersion as string;
    const cacheWatch = await new Promise<ReturnType<typeof request>>((resolve) => {
      const req = request(`${restarted.base}${CSR_PATH}?watch=1&resourceVersion=${rv2}`, { agent: new Agent({ keepAlive: false }) }, () => resolve(req));
      req.end();
    });
    // The cache loads in the background; wait (bounded) until the RSS stops growing. (A resourceVersion=0 LIST would
    // prove the cache synced, but it is served whole from the cache, ignoring limit, as upstream: 124 MB of JSON.)
    let rssWithCache = rssMiB(child.pid!);
    for (let stable = 0, i = 0; stable < 3 && i < 60; i++) {
      await new Promise((r) => setTimeout(r, 500));
      const now = rssMiB(child.pid!);
      stable = Math.abs(now - rssWithCache) <= 1 ? stable + 1 : 0;
      rssWithCache = now;
    }
    // How clients read a large collection: pages of 500 (kubectl and informers page).
    t = performance.now();
    let pages = 0;
    for (let next = ""; ; pages++) {
      const page = JSON.parse((await http(restarted.base, "GET", `${CSR_PATH}?limit=500${next ? `&continue=${encodeURIComponent(next)}` : ""}`)).text);
      next = page.metadata.continue ?? "";
      if (!next) break;
    }
    const pagedListMs = performance.now() - t;
    const rssAfterPagedList = rssMiB(child.pid!);
    // And the worst case: all objects in one response (124 MB of JSON), which the server must hold while sending.
    t = performance.now();
    const full = await http(restarted.base, "GET", CSR_PATH);
    const fullListMs = performance.now() - t;
    const rssAfterList = rssMiB(child.pid!);
    cacheWatch.destroy();

    const report = {
      date: new Date().toISOString(),
      machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown"}, node ${process.version}`,
      createsPerSecond: Math.round(createsPerSecond),
      createConcurrency: CONCURRENCY,
      list: { items: LIST_SIZE, bytes: listBytes, medianMs: Math.round(percentile(listTimes, 50)), p90Ms: Math.round(percentile(listTimes, 90)) },
      fanout: { watchers: WATCHERS, writes: FANOUT_WRITES, p50Ms: +percentile(latencies, 50).toFixed(1), p99Ms: +percentile(latencies, 99).toFixed(1), maxMs: +latencies.at(-1)!.toFixed(1) },
      rss: { objects: RSS_SIZE, idleMiB: rssIdle, withWatchCacheMiB: rssWithCache, afterPagedListMiB: rssAfterPagedList, pagedListMs: Math.round(pagedListMs), pages: pages + 1, afterUnpagedFullListMiB: rssAfterList, fullListMs: Math.round(fullListMs), fullListBytes: full.text.length },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await stopServer(child);
    agent.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

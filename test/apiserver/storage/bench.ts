// Storage figures: durable creates/s, LIST of 10k keys from SQLite and from the watch cache, memory for 100k objects.
// Run after a build: `node dist/test/apiserver/storage/bench.js [dir]`; memory is measured in a fresh child process.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { openSqliteStorage } from "../../../src/apiserver/storage/sqlite.js";
import { WatchCache } from "../../../src/apiserver/watch/cache.js";
import { groupNames } from "../../../src/api/group.js";

const names = groupNames();
const request = randomBytes(900).toString("base64");

/** A CertificateSigningRequest as stored (no resourceVersion): about 1.5 KB of JSON. */
function csrJson(name: string): string {
  return JSON.stringify({
    apiVersion: `${names.certificates}/v1`,
    kind: "CertificateSigningRequest",
    metadata: { name, uid: randomBytes(16).toString("hex"), creationTimestamp: "2030-01-01T00:00:00Z", labels: { app: "bench" } },
    spec: {
      request,
      signerName: names.signers.apiserverClient,
      usages: ["digital signature", "key encipherment", "client auth"],
      username: "system:node:bench",
      groups: ["system:nodes", "system:authenticated"],
    },
    status: {},
  });
}

const prefix = `/${names.certificates}/certificatesigningrequests/`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), "pca-bench-"));
  const storage = await openSqliteStorage({ path: join(dir, "bench.db"), retention: { revisions: 1_000_000 } });
  console.log(`value size: ${csrJson("csr-0000000").length} bytes`);

  let t = performance.now();
  const N = 10_000;
  for (let i = 0; i < N; i++) await storage.create(`${prefix}csr-${String(i).padStart(7, "0")}`, csrJson(`csr-${i}`));
  const createMs = performance.now() - t;
  console.log(`durable creates (one at a time, awaited): ${Math.round(N / (createMs / 1000))}/s over ${N}`);

  const listTimes: number[] = [];
  for (let i = 0; i < 7; i++) {
    t = performance.now();
    const res = await storage.list(prefix);
    listTimes.push(performance.now() - t);
    if (res.items.length !== N) throw new Error(`listed ${res.items.length}`);
  }
  console.log(`SQLite LIST ${N}: median ${median(listTimes).toFixed(1)} ms (first ${listTimes[0]!.toFixed(1)} ms)`);

  const rev = await storage.revision();
  await storage.update(`${prefix}csr-0000001`, csrJson("changed"));
  t = performance.now();
  const old = await storage.list(prefix, { revision: rev });
  console.log(`SQLite LIST ${N} at an older revision: ${(performance.now() - t).toFixed(1)} ms (${old.items.length} items)`);

  const cache = new WatchCache({ storage, prefix });
  t = performance.now();
  await cache.start();
  console.log(`watch cache sync of ${N}: ${(performance.now() - t).toFixed(1)} ms`);
  const cacheTimes: number[] = [];
  for (let i = 0; i < 7; i++) {
    t = performance.now();
    await cache.list();
    cacheTimes.push(performance.now() - t);
  }
  console.log(`cache LIST ${N}: median ${median(cacheTimes).toFixed(2)} ms`);
  const filterTimes: number[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    await cache.list({ filter: (o) => (o as { metadata: { labels: Record<string, string> } }).metadata.labels.app === "bench" });
    filterTimes.push(performance.now() - t);
  }
  console.log(`cache LIST ${N} with a label filter (decodes each value): median ${median(filterTimes).toFixed(1)} ms`);
  cache.stop();

  // Memory: grow to 100k objects, then measure storage plus a watch cache over them in a fresh process.
  t = performance.now();
  for (let i = N; i < 100_000; i++) await storage.create(`${prefix}csr-${String(i).padStart(7, "0")}`, csrJson(`csr-${i}`));
  console.log(`grew to 100k in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await storage.close();
  const child = spawnSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--memory", dir], { stdio: "inherit" });
  if (child.status !== 0) throw new Error("memory run failed");
  if (!process.argv[2]) rmSync(dir, { recursive: true, force: true });
}

async function memory(path: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;
  const storage = await openSqliteStorage({ path: join(path, "bench.db"), retention: { revisions: 1_000_000 } });
  gc();
  const base = process.memoryUsage();
  const cache = new WatchCache({ storage, prefix });
  let t = performance.now();
  await cache.start();
  const syncMs = performance.now() - t;
  gc();
  const full = process.memoryUsage();
  console.log(`100k objects: storage open RSS ${mb(base.rss)}; with the watch cache synced RSS ${mb(full.rss)}, JS heap ${mb(full.heapUsed)} (cache +${mb(full.heapUsed - base.heapUsed)}); sync took ${syncMs.toFixed(0)} ms`);
  t = performance.now();
  await cache.list();
  console.log(`cache LIST 100k: ${(performance.now() - t).toFixed(1)} ms`);
  t = performance.now();
  const page = await storage.list(prefix, { limit: 500 });
  console.log(`SQLite LIST first page of 500 out of 100k: ${(performance.now() - t).toFixed(1)} ms (remaining ${page.remaining})`);
  cache.stop();
  await storage.close();
}

if (process.argv[2] === "--memory") await memory(process.argv[3]!);
else await main();

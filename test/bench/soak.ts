// bench:soak — whether `platform-ca up` keeps its memory and its store flat over hours of churn: cycles of node-agent
// CSRs created, approved, issued and Evented, then deleted (as the cleaner does in a running cluster) while their
// Events expire (`--event-ttl`, shortened here from the hour of upstream's default), each followed by an idle spell.
// Then the server's and the controllers' threads' heaps are read after a full collection each (through the inspector
// of the `up` process, started with --inspect on a loopback port), with the process's RSS and the store's files on
// disk. A leak shows as heap that grows with the cycles after the first ones (JIT, caches filling, history up to the
// store's retention); the figure is the growth per CSR from the second cycle to the last. Also checks that nothing was
// lost: each cycle's certificates all issued once, its Events all written.
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import { waitForCertificate } from "../../src/cli/ctl/csr-issuance.js";
import { isPlatformError } from "../../src/errors.js";
import { opsGet, sample, startCluster, type Cluster } from "../controller/controllers/cluster.js";
import { freePort } from "../fixtures/ports.js";
import { controllerMetrics, createAll, observe, prepare, untilEvents, waitFor } from "./csr-flow.js";
import { threadHeaps } from "./inspector-heap.js";
import { cpuSeconds, describeHost, envNumber } from "./measure.js";
import { inParallel } from "../fixtures/parallel.js";
import { KEY_A, encryptionYaml } from "../apiserver/encryption/fixtures.js";

const CYCLES = envNumber("BENCH_CYCLES", 8);
const PER_CYCLE = envNumber("BENCH_CYCLE_CSRS", 5_000);
const CLIENTS = envNumber("BENCH_CLIENTS", 32);
const IDLE_SECONDS = envNumber("BENCH_IDLE_SECONDS", 5);
const EVENT_TTL_SECONDS = envNumber("BENCH_EVENT_TTL", 20);
/**
 * BENCH_WAIT=1: each node agent waits for its certificate as `platformctl certificate request --wait` does (a list and
 * a watch of its CSR's name, closed once it is issued) before its next request.
 */
const WAIT = process.env.BENCH_WAIT === "1";
/** BENCH_DELETE_EVENTS=1: the Events are deleted with their CSRs (`kubectl delete events --all`) instead of expiring. */
const DELETE_EVENTS = process.env.BENCH_DELETE_EVENTS === "1";
/**
 * BENCH_ENCRYPTION=1: every resource encrypted at rest (aesgcm, `*.*`), so the texts the store keeps decrypted, the
 * sealed bytes it remembers and the transformation metrics are in the churn too.
 */
const ENCRYPTION = process.env.BENCH_ENCRYPTION === "1";
const NODEAGENT = "platform.io/apiserver-client-nodeagent";
const MiB = 1024 * 1024;

interface Reading {
  /** The SQLite store's files (database and write-ahead log), bytes. */
  readonly storeBytes: number;
  readonly serverHeap: number;
  readonly controllersHeap: number;
  readonly rss: number;
  readonly storedCsrs: number;
  readonly storedEvents: number;
}

/** The server's /metrics, read as the administrator. */
async function serverMetrics(c: Cluster): Promise<string> {
  return (await opsGet(c.adminConfig, `${c.address}/metrics`)).text;
}

/** Both Event APIs (core/v1 and events.k8s.io's) count the one store of Events. */
const storedEvents = (c: Cluster, metrics: string): number =>
  Math.max(sample(metrics, 'apiserver_storage_objects{resource="events"}'), sample(metrics, `apiserver_storage_objects{resource="events.${c.names.events}"}`));

/** Deletes each name with `del` from CLIENTS parallel callers; an object already gone counts as deleted. */
function deleteAll(names: readonly string[], del: (name: string) => Promise<void>): Promise<void> {
  return inParallel(names, CLIENTS, (name) =>
    del(name).catch((err: unknown) => {
      if (!isPlatformError(err, "NOT_FOUND")) throw err;
    }),
  );
}

/** After IDLE_SECONDS: the server's and the controllers' threads' heaps after a full collection, then the server's /metrics. */
async function idleReading(c: Cluster, inspectPort: number): Promise<Reading> {
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const heaps = await threadHeaps(inspectPort);
  const controllers = heaps.workers.find((w) => w.url.includes("controller-thread"));
  if (!controllers) throw new Error(`no controller thread among the workers of platform-ca up: ${heaps.workers.map((w) => w.url).join(", ")}`);
  const server = await serverMetrics(c);
  const size = (file: string) => (existsSync(file) ? statSync(file).size : 0);
  return {
    storeBytes: size(join(c.dataDir, "store.db")) + size(join(c.dataDir, "store.db-wal")),
    serverHeap: heaps.main,
    controllersHeap: controllers.used,
    rss: sample(server, "process_resident_memory_bytes"),
    storedCsrs: sample(server, `apiserver_storage_objects{resource="certificatesigningrequests.${c.names.certificates}"}`),
    storedEvents: storedEvents(c, server),
  };
}

/** An EncryptionConfiguration sealing every resource with aesgcm, in a 0600 file of its own temporary directory. */
function encryptionFile(): { readonly file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "pca-soak-encryption-"));
  const file = join(dir, "encryption.yaml");
  writeFileSync(file, encryptionYaml(["*.*"], [{ aesgcm: { key1: KEY_A } }]), { mode: 0o600 });
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

async function main(): Promise<void> {
  console.log(`bench:soak — ${new Date().toISOString()}, node ${process.version}`);
  console.log(describeHost());
  console.log(`${CYCLES} cycles of ${PER_CYCLE} CSRs from ${CLIENTS} clients through platform-ca up (defaults${ENCRYPTION ? ", every resource encrypted at rest with aesgcm" : ""}), ${WAIT ? "each agent waiting for its certificate, " : ""}each deleted and its Events ${DELETE_EVENTS ? "deleted" : "expired"} (--event-ttl ${EVENT_TTL_SECONDS}s), then ${IDLE_SECONDS} s idle\n`);
  // The inspector of `up` (its main thread, the API server's), on loopback only.
  const inspectPort = await freePort();
  process.env.BENCH_NODE_ARGS = `${process.env.BENCH_NODE_ARGS ?? ""} --inspect=127.0.0.1:${inspectPort}`;
  const encryption = ENCRYPTION ? encryptionFile() : undefined;
  const c = await startCluster({ mode: "up", apiserverArgs: ["--event-ttl", `${EVENT_TTL_SECONDS}s`, ...(encryption ? ["--encryption-provider-config", encryption.file] : [])] });
  const ops = c.controllersOps;
  if (ops === undefined) throw new Error(`platform-ca up did not print the controllers' address:\n${c.apiserver.stdout()}`);
  const watch = observe(c);
  const pid = c.apiserver.child.pid;
  const shared = { resources: c.bootstrapper };
  const rows: Reading[] = [];
  try {
    watch.informer.start();
    await watch.informer.waitForSync();
    console.log("| cycle | work s (until nothing is stored) | CPU s | server heap after a full GC, MiB | controllers' heap after a full GC, MiB | RSS MiB | store files MiB | stored CSRs / Events after |");
    console.log("|---:|---:|---:|---:|---:|---:|---:|---|");
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const csrs: CertificateSigningRequest[] = await prepare(c, `soak${cycle}`, PER_CYCLE);
      const start = performance.now();
      const cpuBefore = cpuSeconds(pid);
      const wait = WAIT ? (csr: CertificateSigningRequest) => waitForCertificate(c.bootstrapClient, c.names, csr.metadata.name!, { timeoutMs: 600_000 }) : undefined;
      await createAll(csrs, CLIENTS, () => shared, undefined, wait);
      if (!(await waitFor(() => watch.issuedCount() >= cycle * PER_CYCLE, 600_000))) throw new Error(`cycle ${cycle}: not every certificate was issued`);
      const events = await untilEvents(c, ops, (e) => e.written + e.failed + e.dropped >= 2 * cycle * PER_CYCLE, 600_000);
      if (events.written !== 2 * cycle * PER_CYCLE) throw new Error(`cycle ${cycle}: ${events.written} Events written of ${2 * cycle * PER_CYCLE} (${events.failed} failed, ${events.dropped} dropped)`);
      const signed = sample(await controllerMetrics(c, ops), `platform_ca_csr_signed_total{signer="${NODEAGENT}"}`);
      if (signed !== cycle * PER_CYCLE) throw new Error(`cycle ${cycle}: ${signed} certificates signed, expected exactly ${cycle * PER_CYCLE}`);
      const listed = DELETE_EVENTS ? (await c.admin.events.list({ namespace: "default" })).items : [];
      await deleteAll(csrs.map((csr) => csr.metadata.name!), (name) => c.admin.csrs.delete(name));
      await deleteAll(listed.map((e) => e.metadata.name!), (name) => c.admin.events.delete(name, { namespace: "default" }));
      if (!(await waitFor(() => watch.present() === 0, 600_000))) throw new Error(`cycle ${cycle}: ${watch.present()} CSRs still watched after their deletion`);
      let left = Infinity;
      for (let waited = 0; left > 0 && waited < EVENT_TTL_SECONDS + 120; waited++) {
        left = storedEvents(c, await serverMetrics(c));
        if (left > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      if (left > 0) throw new Error(`cycle ${cycle}: ${left} Events still stored ${EVENT_TTL_SECONDS + 120} s after their last write`);
      const work = (performance.now() - start) / 1000;
      const cpu = cpuSeconds(pid) - cpuBefore;
      const r = await idleReading(c, inspectPort);
      rows.push(r);
      console.log(`| ${cycle} | ${work.toFixed(1)} | ${cpu.toFixed(1)} | ${(r.serverHeap / MiB).toFixed(1)} | ${(r.controllersHeap / MiB).toFixed(1)} | ${(r.rss / MiB).toFixed(0)} | ${(r.storeBytes / MiB).toFixed(1)} | ${r.storedCsrs} / ${r.storedEvents} |`);
    }
  } finally {
    await watch.informer.stop();
    await c.stop();
    encryption?.remove();
  }
  if (rows.length < 3) return;
  // From the second cycle on: the first one's reading still holds what a fresh process builds once.
  const [second, last] = [rows[1]!, rows.at(-1)!];
  const counted = (rows.length - 2) * PER_CYCLE;
  const perCsr = (a: number, b: number) => `${((b - a) / counted).toFixed(1)} bytes per CSR (${((b - a) / MiB).toFixed(1)} MiB over ${counted} CSRs)`;
  console.log(`\nfrom cycle 2 to cycle ${rows.length}: server heap ${perCsr(second.serverHeap, last.serverHeap)}; controllers' heap ${perCsr(second.controllersHeap, last.controllersHeap)}; RSS ${perCsr(second.rss, last.rss)}; store files ${perCsr(second.storeBytes, last.storeBytes)}`);
}

await main();

// bench:e2e — node-agent CSRs through real `platform-ca up` (or `apiserver` + `controller`) processes (HTTPS, authn, RBAC,
// SQLite): a burst from parallel clients until the last certificate and until all work (the Events) is finished, with
// one identity or one per node; approve→issued latency at a paced rate; the same under qps 20 / burst 30.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CertificateSigningRequest } from "../../src/api/types/csr.js";
import { createPersistently, opsGet, sample, startCluster, type Cluster, type ControllerProc } from "../controller/controllers/cluster.js";
import { controllerMetrics as metricsOf, createAll as createFrom, eventCounts as countsOf, observe, prepare, untilEvents as untilCounts, waitFor, type EventCounts, type Observer } from "./csr-flow.js";
import { transportPeer } from "./burst-peer.js";
import { cpuSeconds, describeHost, describeThreadCpu, mainThreadWaitSeconds, memoryMiB, percentile, threadCpu, envNumber } from "./measure.js";

const CSRS = envNumber("BENCH_CSRS", 10_000);
const CLIENTS = envNumber("BENCH_CLIENTS", 32);
/** CSRs sent through the same path before the clock starts (and all their work awaited): a server that has run a while. */
const WARMUP_CSRS = envNumber("BENCH_WARMUP_CSRS", 2_000);
const PACED_RATE = envNumber("BENCH_PACED_RATE", 50);
const PACED_SECONDS = envNumber("BENCH_PACED_SECONDS", 20);
const THROTTLED_CSRS = envNumber("BENCH_THROTTLED_CSRS", 500);
const NODEAGENT = "platform.io/apiserver-client-nodeagent";
/** Which phases run (default all): burst, burst-distinct (a bootstrap token per node), paced, throttled-burst, throttled-paced. */
const PHASES = new Set((process.env.BENCH_PHASES ?? "burst,burst-distinct,paced,throttled-burst,throttled-paced").split(","));
/** The target of issue-level work: 10,000 CSRs, every Event written, within this many seconds. */
const TARGET_SECONDS = 10;
/** BENCH_PEER=0 skips the transport peer after each burst (burst-peer.ts). */
const PEER = process.env.BENCH_PEER !== "0";

interface Phase {
  readonly c: Cluster;
  readonly controller: ControllerProc;
  readonly watch: Observer;
}

/**
 * BENCH_TARGET=up (default) runs the unthrottled phases through `platform-ca up` (server and controllers in one process,
 * the controllers on their own thread); BENCH_TARGET=split uses `platform-ca apiserver` + `platform-ca controller`.
 * The throttled phases always use a controller process: `up` has no client-throttle flags.
 */
const TARGET = process.env.BENCH_TARGET ?? "up";

async function phase(controllerArgs: readonly string[] | "up", nodeTokens = 0): Promise<Phase> {
  if (controllerArgs === "up") {
    const c = await startCluster({ mode: "up", nodeTokens });
    if (c.controllersOps === undefined) throw new Error(`platform-ca up did not print the controllers' address:\n${c.apiserver.stdout()}`);
    const watch = observe(c);
    watch.informer.start();
    await watch.informer.waitForSync();
    return { c, controller: { ...c.apiserver, ops: c.controllersOps }, watch };
  }
  const c = await startCluster({ nodeTokens });
  const controller = await c.startController(["--leader-elect=false", ...controllerArgs]);
  const watch = observe(c);
  watch.informer.start();
  await watch.informer.waitForSync();
  return { c, controller, watch };
}

/** The controllers' metrics (their ops endpoint, read as the administrator). */
const controllerMetrics = (p: Phase): Promise<string> => metricsOf(p.c, p.controller.ops);

interface GcSeconds {
  readonly all: number;
  readonly minor: number;
}

/**
 * What the server's /metrics and the controllers' say so far of a burst's costs: the seconds each thread has been
 * paused by the garbage collector (the sum of `nodejs_gc_duration_seconds` over its kinds, and the minor collections'
 * alone; V8's helper thread's share of the collection is not in them, it counts in "other threads"), and the store's
 * log flushes and group commits.
 */
async function serverCounts(p: Phase): Promise<{ readonly server: GcSeconds; readonly controllers: GcSeconds; readonly store: StoreCounts }> {
  const of = (text: string): GcSeconds => {
    let all = 0;
    let minor = 0;
    for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} ([\d.e+-]+)$/gm)) {
      all += Number(m[2]);
      if (m[1] === "minor") minor += Number(m[2]);
    }
    return { all, minor };
  };
  const [server, controllers] = await Promise.all([opsGet(p.c.adminConfig, `${p.c.address}/metrics`), controllerMetrics(p)]);
  const flush = 'platform_ca_storage_flush_duration_seconds_{}{file="log"}';
  const store = {
    flushes: sample(server.text, flush.replace("{}", "count")),
    flushSeconds: sample(server.text, flush.replace("{}", "sum")),
    commits: sample(server.text, "platform_ca_storage_commit_writes_count"),
    writes: sample(server.text, "platform_ca_storage_commit_writes_sum"),
  };
  return { server: of(server.text), controllers: of(controllers), store };
}

/** The SQLite store's log flushes (how many, their time) and group commits (how many, their writes) so far. */
interface StoreCounts {
  readonly flushes: number;
  readonly flushSeconds: number;
  readonly commits: number;
  readonly writes: number;
}
const eventCounts = (p: Phase): Promise<EventCounts> => countsOf(p.c, p.controller.ops);
const untilEvents = (p: Phase, done: (c: EventCounts) => boolean, limitMs: number): Promise<EventCounts> => untilCounts(p.c, p.controller.ops, done, limitMs);

async function summary(p: Phase): Promise<{ metrics: string; apiserverCpu: number; controllerCpu: number }> {
  const metrics = await controllerMetrics(p);
  return { metrics, apiserverCpu: cpuSeconds(p.c.apiserver.child.pid), controllerCpu: cpuSeconds(p.controller.child.pid) };
}

/** What the controller's metrics and the processes' CPU times say about where the time went. */
async function report(p: Phase): Promise<void> {
  const s = await summary(p);
  const syncs = (name: string) => {
    const sum = sample(s.metrics, `platform_ca_controller_sync_duration_seconds_sum{name="${name}"}`);
    const n = sample(s.metrics, `platform_ca_controller_sync_duration_seconds_count{name="${name}"}`);
    const waited = sample(s.metrics, `platform_ca_workqueue_queue_duration_seconds_sum{name="${name}"}`);
    return `${n} syncs, mean ${((sum / n) * 1000).toFixed(1)} ms, mean queue wait ${((waited / n) * 1000).toFixed(1)} ms`;
  };
  const signSum = sample(s.metrics, `platform_ca_csr_signing_duration_seconds_sum{signer="${NODEAGENT}"}`);
  const signed = sample(s.metrics, `platform_ca_csr_signed_total{signer="${NODEAGENT}"}`);
  console.log(`signed ${signed}, approved ${sample(s.metrics, `platform_ca_csr_approved_total{signer="${NODEAGENT}"}`)}; signer CPU per certificate ${((signSum / signed) * 1000).toFixed(3)} ms`);
  console.log(`csrapproving: ${syncs("csrapproving")}; csrsigning: ${syncs("csrsigning")}`);
  const bench = `bench (clients + watch) ${(process.cpuUsage().user / 1e6).toFixed(1)} s user`;
  if (p.controller.child === p.c.apiserver.child) {
    console.log(`CPU used: platform-ca up ${s.apiserverCpu.toFixed(1)} s (server and controller threads), ${bench}; peak RSS of platform-ca up ${memoryMiB(p.c.apiserver.child.pid, "VmHWM").toFixed(0)} MiB`);
  } else console.log(`CPU used: apiserver ${s.apiserverCpu.toFixed(1)} s, controller ${s.controllerCpu.toFixed(1)} s, ${bench}`);
}

/**
 * Events (AutoApproved and CertificateIssued per CSR) are written from a queue by a few writers, behind the
 * controllers' own work: when the last of them was written, and how many were dropped, from the controller's metrics.
 */
async function reportEvents(p: Phase, start: number, expected: number): Promise<number> {
  const last = await untilEvents(p, (c) => c.written + c.failed + c.dropped >= expected, 300_000);
  const seconds = (performance.now() - start) / 1000;
  console.log(`events: ${last.written} written, ${last.failed} failed, ${last.dropped} dropped, ${last.throttled} throttled (then written) of ${expected}; the last written after ${seconds.toFixed(1)} s`);
  return seconds;
}

/**
 * CPU between two readings, split by role: in `up` the main thread serves the API and the busiest other thread runs
 * the controllers (the rest: GC, the libuv pool's log flushes); with separate processes, one process each.
 */
function cpuSplit(procs: readonly (readonly [string, number | undefined])[], before: readonly Map<string, number>[], after: readonly Map<string, number>[]): { server: number; controllers: number; other: number } {
  const used = (i: number) => [...after[i]!].map(([name, s]) => [name, s - (before[i]!.get(name) ?? 0)] as const);
  if (procs.length === 2) {
    const sum = (i: number) => used(i).reduce((t, [, s]) => t + s, 0);
    return { server: sum(0), controllers: sum(1), other: 0 };
  }
  const threads = used(0);
  const server = threads.find(([name]) => name === "main")?.[1] ?? 0;
  const rest = threads.filter(([name]) => name !== "main").map(([, s]) => s).sort((a, b) => b - a);
  return { server, controllers: rest[0] ?? 0, other: rest.slice(1).reduce((t, s) => t + s, 0) };
}

async function finish(p: Phase): Promise<void> {
  await p.watch.informer.stop();
  await p.c.stop();
}

/** Creates every CSR from CLIENTS parallel clients, each CSR from the shared bootstrap identity or (distinct) its node's own. */
function createAll(p: Phase, csrs: readonly CertificateSigningRequest[], distinct: boolean): Promise<void> {
  const shared = { resources: p.c.bootstrapper };
  return createFrom(csrs, CLIENTS, (i) => (distinct ? p.c.nodeAgent(i) : shared), (csr) => {
    const t = p.watch.times.get(csr.metadata.name!) ?? {};
    t.created = performance.now();
    p.watch.times.set(csr.metadata.name!, t);
  });
}

/**
 * WARMUP_CSRS through the same path before the clock starts, every certificate and Event awaited: the server's and the
 * controllers' code optimised and their caches filled, as in a server that has been running. Returns how many.
 */
async function warmUp(p: Phase): Promise<number> {
  if (WARMUP_CSRS === 0) return 0;
  await createAll(p, await prepare(p.c, "warm", WARMUP_CSRS), false);
  if (!(await waitFor(() => p.watch.issuedCount() >= WARMUP_CSRS, 600_000))) throw new Error("the warm-up's certificates were not all issued");
  if ((await untilEvents(p, (c) => c.written >= 2 * WARMUP_CSRS, 600_000)).written < 2 * WARMUP_CSRS) throw new Error("the warm-up's Events were not all written");
  return WARMUP_CSRS;
}

/**
 * `count` CSRs from CLIENTS parallel clients as fast as they go: seconds until the last certificate is issued and until
 * all work is finished (every Event written), and the CPU per CSR of the server, the controllers and this load generator.
 * `distinct`: each CSR comes from a node agent with a bootstrap token of its own (one SubjectAccessReview per node).
 */
async function burst(label: string, count: number, controllerArgs: readonly string[] | "up", distinct = false): Promise<void> {
  const p = await phase(controllerArgs, distinct ? count : 0);
  const csrs = await prepare(p.c, distinct ? "node" : "burst", count);
  const warm = await warmUp(p);
  // `up` is one process; the split target has a second one, the controller.
  const procs = p.controller.child === p.c.apiserver.child ? [["platform-ca up", p.c.apiserver.child.pid] as const] : [["apiserver", p.c.apiserver.child.pid] as const, ["controller", p.controller.child.pid] as const];
  const countsAtStart = await serverCounts(p);
  const cpuAtStart = { threads: procs.map(([, pid]) => threadCpu(pid)), bench: process.cpuUsage() };
  const serverWaitAtStart = mainThreadWaitSeconds(procs[0]![1]);
  const start = performance.now();
  await createAll(p, csrs, distinct);
  const created = (performance.now() - start) / 1000;
  const complete = await waitFor(() => p.watch.issuedCount() >= warm + count, 3_600_000);
  const total = (performance.now() - start) / 1000;
  const writtenByThen = (await eventCounts(p)).written - 2 * warm;
  const cpuAtIssued = { threads: procs.map(([, pid]) => threadCpu(pid)), bench: process.cpuUsage(cpuAtStart.bench) };
  const threads = procs.map(([name, pid], i) => `${name} ${describeThreadCpu(cpuAtStart.threads[i]!, cpuAtIssued.threads[i]!)}`);
  console.log(`\n## ${label}: ${count} CSRs from ${CLIENTS} clients (${describeTarget(controllerArgs)}${warm ? `; after ${warm} CSRs of warm-up` : ""})`);
  console.log(`all created after ${created.toFixed(1)} s (${(count / created).toFixed(0)} creates/s); ${complete ? "all" : "NOT all"} issued after ${total.toFixed(1)} s → ${(count / total).toFixed(1)} CSRs/s`);
  console.log(`Events written by then: ${writtenByThen}`);
  console.log(`CPU until the last was issued: ${threads.join("; ")}; bench ${((cpuAtIssued.bench.user + cpuAtIssued.bench.system) / 1e6).toFixed(1)} s`);
  const finished = await reportEvents(p, start, 2 * (warm + count));
  const benchCpu = process.cpuUsage(cpuAtStart.bench);
  const split = cpuSplit(procs, cpuAtStart.threads, procs.map(([, pid]) => threadCpu(pid)));
  const perCsr = (seconds: number) => ((seconds * 1000) / count).toFixed(2);
  const load = (benchCpu.user + benchCpu.system) / 1e6;
  const allCpu = split.server + split.controllers + split.other + load;
  console.log(
    `last certificate issued after ${total.toFixed(1)} s; all work finished (every Event written) after ${finished.toFixed(1)} s (target ≤ ${TARGET_SECONDS} s for 10,000)`,
  );
  console.log(
    `CPU per CSR until all work finished: server ${perCsr(split.server)} ms, controllers ${perCsr(split.controllers)} ms, other threads ${perCsr(split.other)} ms, load generator (clients + watch) ${perCsr(load)} ms; ` +
      `in all ${allCpu.toFixed(1)} s of CPU for ${finished.toFixed(1)} s on 2 cores`,
  );
  // Runnable but not running: how long the server's thread waited for a core while the other threads (and the load
  // generator) had both. CPU per CSR says what the work costs; this says how much of the wall time the sharing added.
  // The wall time over the server thread's time on a core, and how full both cores were: together they say whether the
  // server's thread or the sum of all threads bounds the burst (docs/benchmarks.md, the helper threads' A/B).
  console.log(
    `server thread: ${split.server.toFixed(1)} s on a core, ${(mainThreadWaitSeconds(procs[0]![1]) - serverWaitAtStart).toFixed(1)} s runnable, waiting for one; ` +
      `all work finished in ${(finished / split.server).toFixed(2)}× its time on a core, both cores ${((100 * allCpu) / (2 * finished)).toFixed(0)}% busy`,
  );
  // Read after the CPU above: a scrape's own cost stays out of it. The pauses include the scrapes' few collections.
  const counts = await serverCounts(p);
  const paused = (end: GcSeconds, begin: GcSeconds, cpu: number) =>
    `${(end.all - begin.all).toFixed(2)} s (${((100 * (end.all - begin.all)) / cpu).toFixed(0)}% of its CPU; minor collections ${(end.minor - begin.minor).toFixed(2)} s)`;
  console.log(`garbage collection pauses until all work finished: server thread ${paused(counts.server, countsAtStart.server, split.server)}, controllers' thread ${paused(counts.controllers, countsAtStart.controllers, split.controllers)}`);
  const flushes = counts.store.flushes - countsAtStart.store.flushes;
  const commits = counts.store.commits - countsAtStart.store.commits;
  if (flushes > 0 && commits > 0) {
    const ms = ((counts.store.flushSeconds - countsAtStart.store.flushSeconds) * 1000) / flushes;
    console.log(`the store: ${flushes} log flushes, ${ms.toFixed(2)} ms on average from hand-over to the thread pool until the server's thread heard; ${commits} group commits of ${((counts.store.writes - countsAtStart.store.writes) / commits).toFixed(1)} writes on average`);
  }
  await report(p);
  // A throttled burst runs at the throttle's pace: the transport is not what it measures.
  if (PEER && controllerArgs !== UPSTREAM_THROTTLE) await peer(p.c, count, finished);
  await finish(p);
}

/**
 * The burst's requests through a bare node server, right after it on the same cores (burst-peer.ts): five per CSR, the
 * creates from CLIENTS callers here over HTTPS with the API server's certificate, the controllers' four from 32 callers
 * (two controllers' 16 syncs, ConcurrentCSRSyncs' default until 2026-11-27: kept, so ratios compare across runs) on a
 * thread beside the server.
 */
async function peer(c: Cluster, count: number, finished: number): Promise<void> {
  const pki = join(c.dataDir, "pki");
  const r = await transportPeer({ certFile: join(pki, "apiserver.crt"), keyFile: join(pki, "apiserver.key"), caFile: c.caFiles.certFile, creates: count, createCallers: CLIENTS, controllerRequests: 4 * count, controllerCallers: 32 });
  console.log(
    `transport peer, same run: the burst's ${5 * count} requests through a bare node server (JSON body parsed, 3 KB answered; ${count} creates over HTTPS, ${4 * count} over its unix-domain socket from a thread of its process) in ${r.seconds.toFixed(1)} s ` +
      `(CPU: server thread ${r.server.toFixed(1)} s, its other threads ${r.others.toFixed(1)} s, clients here ${r.clients.toFixed(1)} s); all work finished in ${(finished / r.seconds).toFixed(1)}× the peer's time`,
  );
}

/** PACED_RATE CSRs per second for PACED_SECONDS; approve→issued and create→issued latency as the watch saw them. */
async function paced(label: string, controllerArgs: readonly string[] | "up", seconds = PACED_SECONDS): Promise<void> {
  const p = await phase(controllerArgs);
  const count = PACED_RATE * seconds;
  const csrs = await prepare(p.c, "paced", count);
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / PACED_RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const csr = csrs[i]!;
    p.watch.times.set(csr.metadata.name!, { created: performance.now() });
    pending.push(createPersistently(p.c.bootstrapper, csr));
  }
  await Promise.all(pending);
  const complete = await waitFor(() => p.watch.issuedCount() >= count, 600_000);
  const timelines = [...p.watch.times.values()].filter((t) => t.issued !== undefined && t.approved !== undefined && t.created !== undefined);
  const approveToIssued = timelines.map((t) => t.issued! - t.approved!);
  const createToIssued = timelines.map((t) => t.issued! - t.created!);
  const createToApproved = timelines.map((t) => t.approved! - t.created!);
  console.log(`\n## ${label}: ${count} CSRs paced at ${PACED_RATE}/s (${describeTarget(controllerArgs)})`);
  console.log(`${complete ? "all" : "NOT all"} issued; approve→issued p50 ${percentile(approveToIssued, 50).toFixed(1)} ms, p99 ${percentile(approveToIssued, 99).toFixed(1)} ms, max ${Math.max(...approveToIssued).toFixed(1)} ms`);
  console.log(`create→approved p50 ${percentile(createToApproved, 50).toFixed(1)} ms, p99 ${percentile(createToApproved, 99).toFixed(1)} ms`);
  console.log(`create→issued p50 ${percentile(createToIssued, 50).toFixed(1)} ms, p99 ${percentile(createToIssued, 99).toFixed(1)} ms`);
  await report(p);
  await finish(p);
}

/** BENCH_WORKERS sets PlatformCAExtensions.ConcurrentCSRSyncs (workers of the approver and of the signer; default 64). */
const WORKERS = process.env.BENCH_WORKERS;
const workerArgs = (): string[] => {
  if (WORKERS === undefined) return [];
  const file = join(mkdtempSync(join(tmpdir(), "bench-e2e-")), "cm.yaml");
  writeFileSync(file, `apiVersion: platformcontrollermanager.config.platform.io/v1alpha1\nkind: PlatformControllerManagerConfiguration\nPlatformCAExtensions:\n  ConcurrentCSRSyncs: ${Number(WORKERS)}\n`);
  return ["--config", file];
};
const UNTHROTTLED: readonly string[] | "up" = TARGET === "up" ? "up" : ["--kube-api-qps", "0", ...workerArgs()];
const describeTarget = (args: readonly string[] | "up"): string => (args === "up" ? "platform-ca up, defaults" : `apiserver + controller ${args.join(" ") || "defaults"}`);
const UPSTREAM_THROTTLE = ["--kube-api-qps", "20", "--kube-api-burst", "30", ...workerArgs()];

console.log(`bench:e2e — ${new Date().toISOString()}, node ${process.version}`);
console.log(describeHost());
if (PHASES.has("burst")) await burst("burst, no client throttle", CSRS, UNTHROTTLED);
if (PHASES.has("burst-distinct")) await burst("burst, a bootstrap token per node, no client throttle", CSRS, UNTHROTTLED, true);
if (PHASES.has("paced")) await paced("paced, no client throttle", UNTHROTTLED);
if (PHASES.has("throttled-burst")) await burst("burst, qps 20 / burst 30", THROTTLED_CSRS, UPSTREAM_THROTTLE);
// At 50/s the throttled controller falls behind from the start, so a shorter run shows the backlog without waiting minutes.
if (PHASES.has("throttled-paced")) await paced("paced, qps 20 / burst 30", UPSTREAM_THROTTLE, Math.min(PACED_SECONDS, 10));

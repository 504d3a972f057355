// bench:metrics — what timing one request costs the API server's thread: an observation of the request latency
// histogram (eight labels, upstream's buckets) through AccumulatedHistogram, against prom-client's Histogram (the
// peer), the same label objects and durations for both, in interleaved rounds. CPU time per observation, medians.
// Then the controllers' ~25 metric updates of one CSR through ControllerMetrics, against the same updates through
// prom-client's Counter, Gauge and Histogram (the peer: what ControllerMetrics was built on before).
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { AccumulatedHistogram } from "../../src/accumulated-metrics.js";
import { REQUEST_BUCKETS, requestKey, type RequestLabels } from "../../src/apiserver/metrics.js";
import { ControllerMetrics, FAST_BUCKETS, LIFETIME_BUCKETS } from "../../src/controller/metrics.js";
import { describeHost, envNumber, percentile } from "./measure.js";

const OBSERVATIONS = envNumber("BENCH_OBSERVATIONS", 400_000);
const ROUNDS = envNumber("BENCH_ROUNDS", 5);
/** The requests of a CSR's flow: its create, approval, status and Events. */
const REQUESTS = [
  ["POST", "certificates.platform.io", "certificatesigningrequests", ""],
  ["PUT", "certificates.platform.io", "certificatesigningrequests", "approval"],
  ["PUT", "certificates.platform.io", "certificatesigningrequests", "status"],
  ["POST", "events.platform.io", "events", ""],
] as const;

/** A request's labels, a new object each time, as each request's tracker has its own. */
function labelsOf(i: number): RequestLabels {
  const [verb, group, resource, subresource] = REQUESTS[i & 3]!;
  return { verb, dry_run: "", group, version: "v1", resource, subresource, scope: "resource", component: "apiserver" };
}

/** µs of CPU per observation; the accumulated one builds its key as the request tracker does (`requestKey`). */
function round(accumulated: boolean): number {
  const registers = [new Registry()];
  const ours = new AccumulatedHistogram<RequestLabels>({ name: "latency", help: "latency", buckets: REQUEST_BUCKETS, registers });
  const theirs = new Histogram({ name: "latency2", help: "latency", labelNames: Object.keys(labelsOf(0)), buckets: REQUEST_BUCKETS, registers });
  const start = process.cpuUsage();
  for (let i = 0; i < OBSERVATIONS; i++) {
    const l = labelsOf(i);
    const seconds = (i % 1000) / 20_000;
    if (accumulated) ours.observe(requestKey(l), l, seconds);
    else theirs.observe(l as unknown as Record<string, string>, seconds);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / OBSERVATIONS;
}

const SIGNER = "platform.io/apiserver-client-nodeagent";
const QUEUES = ["csrapproving", "csrsigning"] as const;

/** The controllers' metric updates of one CSR (as the burst of bench:e2e makes them), by the updates a recorder takes. */
interface CsrUpdates {
  add(queue: string): void;
  depth(queue: string, depth: number): void;
  waited(queue: string, seconds: number): void;
  synced(queue: string, seconds: number): void;
  issued(seconds: number, lifetime: number): void;
  approved(): void;
  event(): void;
}

function oneCsr(u: CsrUpdates, i: number): void {
  for (const q of QUEUES) {
    // Three watch events each add the key; the depth is reported at each add and take.
    for (let k = 0; k < 3; k++) {
      u.add(q);
      u.depth(q, i & 7);
    }
    u.depth(q, i & 3);
    u.waited(q, 0.0003);
    u.synced(q, 0.03);
  }
  u.approved();
  u.issued(0.0004, 3600);
  u.event();
  u.event();
}

function ourUpdates(): CsrUpdates {
  const m = new ControllerMetrics();
  const q = m.workQueue();
  const ev = m.eventResult();
  return {
    add: (name) => q.add!(name, ""),
    depth: (name, d) => q.depth!(name, d),
    waited: (name, s) => q.queueLatency!(name, s * 1000),
    synced: (name, s) => q.workDuration!(name, s * 1000),
    issued: (seconds, lifetime) => {
      const labels = { signer: SIGNER };
      m.csrSigned.inc(SIGNER, labels);
      m.signingDuration.observe(SIGNER, labels, seconds);
      m.requestedDuration.observe(SIGNER, labels, lifetime);
      m.honouredDuration.observe(SIGNER, labels, lifetime);
    },
    approved: () => {
      m.approvalReviews.inc("reused", { result: "reused" });
      m.csrApproved.inc(SIGNER, { signer: SIGNER });
    },
    event: () => ev("written"),
  };
}

function promClientUpdates(): CsrUpdates {
  const registers = [new Registry()];
  const counter = (name: string, label: string) => new Counter({ name, help: name, labelNames: [label], registers });
  const histogram = (name: string, label: string, buckets: readonly number[]) => new Histogram({ name, help: name, labelNames: [label], buckets: [...buckets], registers });
  const depth = new Gauge({ name: "depth", help: "depth", labelNames: ["name"], registers });
  const [adds, signed, approved, reviews, events] = [counter("adds", "name"), counter("signed", "signer"), counter("approved", "signer"), counter("reviews", "result"), counter("events", "result")];
  const [waited, synced] = [histogram("waited", "name", FAST_BUCKETS), histogram("synced", "name", FAST_BUCKETS)];
  const [signing, requested, honoured] = [histogram("signing", "signer", FAST_BUCKETS), histogram("requested", "signer", LIFETIME_BUCKETS), histogram("honoured", "signer", LIFETIME_BUCKETS)];
  return {
    add: (name) => adds.inc({ name }),
    depth: (name, d) => depth.set({ name }, d),
    waited: (name, s) => waited.observe({ name }, s),
    synced: (name, s) => synced.observe({ name }, s),
    issued: (seconds, lifetime) => {
      signed.inc({ signer: SIGNER });
      signing.observe({ signer: SIGNER }, seconds);
      requested.observe({ signer: SIGNER }, lifetime);
      honoured.observe({ signer: SIGNER }, lifetime);
    },
    approved: () => {
      reviews.inc({ result: "reused" });
      approved.inc({ signer: SIGNER });
    },
    event: () => events.inc({ result: "written" }),
  };
}

/** µs of CPU per CSR's updates. */
function csrRound(u: CsrUpdates): number {
  const csrs = OBSERVATIONS / 10;
  const start = process.cpuUsage();
  for (let i = 0; i < csrs; i++) oneCsr(u, i);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / csrs;
}

const ours: number[] = [];
const theirs: number[] = [];
const oursCsr: number[] = [];
const theirsCsr: number[] = [];
round(true); // warm-up: both paths optimised before the first measured round
round(false);
csrRound(ourUpdates());
csrRound(promClientUpdates());
for (let r = 0; r < ROUNDS; r++) {
  theirs.push(round(false));
  ours.push(round(true));
  theirsCsr.push(csrRound(promClientUpdates()));
  oursCsr.push(csrRound(ourUpdates()));
}
const median = (xs: number[]) => percentile(xs, 50).toFixed(3);
const row = (name: string, xs: number[]) => `| ${name} | ${median(xs)} | ${xs.map((x) => x.toFixed(3)).join(", ")} |`;
console.log(`bench:metrics — ${new Date().toISOString()}, node ${process.version}; ${describeHost()}`);
console.log(`${OBSERVATIONS} observations per round, ${ROUNDS} interleaved rounds, medians (CPU µs per observation):`);
console.log(`| histogram | µs per observation | rounds |`);
console.log(`|---|---:|---|`);
console.log(row("prom-client Histogram (peer)", theirs));
console.log(row("AccumulatedHistogram, its key built", ours));
console.log(`\nThe controllers' metric updates of one CSR, ${OBSERVATIONS / 10} CSRs per round (CPU µs per CSR):`);
console.log(`| metrics | µs per CSR | rounds |`);
console.log(`|---|---:|---|`);
console.log(row("prom-client Counter, Gauge, Histogram (peer)", theirsCsr));
console.log(row("ControllerMetrics", oursCsr));

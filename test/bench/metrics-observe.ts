// bench:metrics — what timing one request costs the API server's thread: an observation of the request latency
// histogram (eight labels, upstream's buckets) through AccumulatedHistogram, against prom-client's Histogram (the
// peer), the same label objects and durations for both, in interleaved rounds. CPU time per observation, medians.
import { Histogram, Registry } from "prom-client";
import { AccumulatedHistogram } from "../../src/apiserver/accumulated-histogram.js";
import { REQUEST_BUCKETS, requestKey, type RequestLabels } from "../../src/apiserver/metrics.js";
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

const ours: number[] = [];
const theirs: number[] = [];
round(true); // warm-up: both paths optimised before the first measured round
round(false);
for (let r = 0; r < ROUNDS; r++) {
  theirs.push(round(false));
  ours.push(round(true));
}
const median = (xs: number[]) => percentile(xs, 50).toFixed(3);
console.log(`bench:metrics — ${new Date().toISOString()}, node ${process.version}; ${describeHost()}`);
console.log(`${OBSERVATIONS} observations per round, ${ROUNDS} interleaved rounds, medians (CPU µs per observation):`);
console.log(`| histogram | µs per observation | rounds |`);
console.log(`|---|---:|---|`);
console.log(`| prom-client Histogram (peer) | ${median(theirs)} | ${theirs.map((x) => x.toFixed(3)).join(", ")} |`);
console.log(`| AccumulatedHistogram, its key built | ${median(ours)} | ${ours.map((x) => x.toFixed(3)).join(", ")} |`);

// What the requests in flight hold on the API server's thread: heap snapshots of a running `up` (or `apiserver`),
// through its inspector, each reporting how many requests fastify is answering and the bytes only they and their
// suspended async functions keep alive — what the scavenger copies for them while they wait for their log flush.
//   BENCH_NODE_ARGS=--inspect=127.0.0.1:9341 BENCH_PEER=0 BENCH_PHASES=burst node dist/test/bench/e2e.js &
//   node --experimental-websocket dist/test/bench/heap-in-flight.js 9341
// BENCH_SNAPSHOTS (8) snapshots, BENCH_INTERVAL_MS (1000) apart after each, the first after BENCH_DELAY_MS (5000): a
// snapshot stops the thread for a second or two, so the run that carries them is for this count, not for its times.
import { mainHeapSnapshot } from "./inspector-heap.js";
import { generatorFunction, heapGraph, retainedOnlyBy, type HeapGraph } from "./heap-graph.js";
import { envNumber } from "./measure.js";
import { until } from "../fixtures/wait.js";

/** A request being answered: fastify's and node's objects of one exchange (the in-thread channel's too). */
const REQUEST_OBJECTS = new Set(["Reply", "_Request", "LocalRequest", "LocalResponse", "IncomingMessage", "ServerResponse"]);
/** The async functions a write is suspended in while it waits (fastify's handler, the resource handler, the registry). */
const REQUEST_FUNCTIONS = new Set(["handler", "handle", "create", "update", "patch", "apply", "delete", "write", "createChecked"]);

function inFlight(g: HeapGraph, i: number): boolean {
  if (g.type(i) !== "object") return false;
  const name = g.name(i);
  return REQUEST_OBJECTS.has(name) || (name === "Generator" && REQUEST_FUNCTIONS.has(generatorFunction(g, i) ?? ""));
}

function count(g: HeapGraph, name: string): number {
  let n = 0;
  for (let i = 0; i < g.count; i++) if (g.type(i) === "object" && g.name(i) === name) n++;
  return n;
}

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) throw new Error("usage: heap-in-flight.js INSPECTOR_PORT");
const SNAPSHOTS = envNumber("BENCH_SNAPSHOTS", 8);
const INTERVAL_MS = envNumber("BENCH_INTERVAL_MS", 1000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// The inspector opens with the process (up to a minute away): wait for it, then for the work to begin.
await until(() => fetch(`http://127.0.0.1:${port}/json/list`).then(() => true, () => false), `the inspector on 127.0.0.1:${port}`, 6000);
await sleep(envNumber("BENCH_DELAY_MS", 5000));
console.log(`heap-in-flight — ${new Date().toISOString()}, inspector 127.0.0.1:${port}`);
console.log("| taken (UTC) | heap MB | replies in flight | of them the channel's | retained only by the requests, KB | per reply, KB |");
console.log("|---|---:|---:|---:|---:|---:|");
for (let n = 0; n < SNAPSHOTS; n++) {
  const taken = new Date().toISOString().slice(11, 19);
  const g = heapGraph(await mainHeapSnapshot(port));
  let heap = 0;
  for (let i = 0; i < g.count; i++) heap += g.size(i);
  const replies = count(g, "Reply");
  const { bytes } = retainedOnlyBy(g, (i) => inFlight(g, i));
  const per = replies > 0 ? (bytes / replies / 1000).toFixed(1) : "—";
  console.log(`| ${taken} | ${(heap / 1e6).toFixed(1)} | ${replies} | ${count(g, "LocalRequest")} | ${(bytes / 1000).toFixed(0)} | ${per} |`);
  await sleep(INTERVAL_MS);
}

// bench:e2e's floor of a watch: CPU per event of one watch from a bare node server to a reader on another thread of the
// same process, the way `up`'s controllers read the CSR watch — over the data directory's unix-domain socket (node's
// HTTP, chunked) as before, and over the in-thread channel (the head, then each turn's writes as one text chunk). Both
// readers decode with the client's own watch decoder; the server writes EVENTS_PER_TURN CSR-sized events a turn.
// Run: `node dist/test/bench/watch-transport.js` after `npm run build`.
import { createServer, get, type ServerResponse } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { isMainThread, parentPort, Worker, workerData, type MessagePort } from "node:worker_threads";
import { serveLocalChannels } from "../../src/apiserver/bootstrap/local-channel.js";
import { ChannelTransport } from "../../src/client/channel-transport.js";
import { watchEvents } from "../../src/client/watch.js";
import { silentLogger } from "../../src/logger.js";
import { describeHost, envNumber, threadCpu } from "./measure.js";

const EVENTS = envNumber("BENCH_EVENTS", 60_000);
const EVENTS_PER_TURN = envNumber("BENCH_EVENTS_PER_TURN", 20);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const MODES = ["unix-domain socket (node's HTTP, chunked)", "in-thread channel"] as const;

interface ReaderData {
  readonly socketPath?: string;
  readonly port?: MessagePort;
}

/** The reader's thread: opens the watch, decodes every event, reports how many and their bytes. */
async function read(data: ReaderData): Promise<void> {
  const abort = new AbortController();
  const open = data.port
    ? async () => (await new ChannelTransport(data.port!).open({ method: "GET", path: "/watch", headers: {}, signal: abort.signal })).body
    : () => new Promise<Readable>((resolve) => get({ socketPath: data.socketPath!, path: "/watch" }, resolve));
  parentPort!.postMessage("reading");
  let events = 0;
  let bytes = 0;
  for await (const event of watchEvents(open, abort.signal, { method: "GET", path: "/watch" })) {
    events++;
    bytes += (event.object as { spec?: { request?: string } }).spec?.request?.length ?? 0;
  }
  parentPort!.postMessage({ events, bytes });
}

/** A CSR-sized event, distinct per index (no two texts alike). */
const eventText = (i: number): string =>
  `{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"CertificateSigningRequest","metadata":{"name":"node-${i}","resourceVersion":"${i}"},"spec":{"request":"${"A".repeat(1800)}","usages":["client auth"]}}}\n`;

/** One round of one mode: µs of CPU per event on the server's thread and on the others (the reader's and helpers). */
async function round(mode: (typeof MODES)[number]): Promise<{ server: number; others: number }> {
  let watch: ServerResponse | undefined;
  const server = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    watch = res;
  });
  const dir = mkdtempSync(join(tmpdir(), "watch-transport-"));
  const channels = mode === "in-thread channel" ? serveLocalChannels(server, silentLogger()) : undefined;
  const data: ReaderData = channels ? { port: channels.open() } : { socketPath: join(dir, "watch.sock") };
  if (data.socketPath) await new Promise<void>((resolve) => server.listen(data.socketPath, resolve));
  const reader = new Worker(new URL(import.meta.url), { workerData: data, transferList: data.port ? [data.port] : [] });
  await new Promise((resolve) => reader.once("message", resolve));
  while (watch === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
  const before = threadCpu(process.pid);
  const done = new Promise<{ events: number; bytes: number }>((resolve) => reader.once("message", resolve));
  let i = 0;
  await new Promise<void>((resolve) => {
    const turn = () => {
      for (let k = 0; k < EVENTS_PER_TURN && i < EVENTS; k++, i++) watch!.write(eventText(i));
      if (i < EVENTS) return void setImmediate(turn);
      watch!.end();
      resolve();
    };
    turn();
  });
  const got = await done;
  const after = threadCpu(process.pid);
  // Every event read, whole: a reader that lost or cut one would measure less than a reader pays.
  if (got.events !== EVENTS || got.bytes !== EVENTS * 1800) throw new Error(`${mode}: ${got.events} of ${EVENTS} events read (${got.bytes} bytes of requests)`);
  let serverSeconds = 0;
  let otherSeconds = 0;
  for (const [name, seconds] of after) (name === "main" ? (s: number) => (serverSeconds += s) : (s: number) => (otherSeconds += s))(seconds - (before.get(name) ?? 0));
  await reader.terminate();
  channels?.close();
  server.close();
  rmSync(dir, { recursive: true, force: true });
  return { server: (serverSeconds * 1e6) / EVENTS, others: (otherSeconds * 1e6) / EVENTS };
}

async function main(): Promise<void> {
  console.log(`watch-transport — ${new Date().toISOString()}, node ${process.version}`);
  console.log(describeHost());
  console.log(`${EVENTS} events of ~1.9 KB per round, ${EVENTS_PER_TURN} written per turn, ${ROUNDS} rounds alternating the two modes\n`);
  const results = new Map<string, { server: number; others: number }[]>(MODES.map((m) => [m, []]));
  for (let r = 0; r < ROUNDS; r++) for (const mode of MODES) results.get(mode)!.push(await round(mode));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log("| watch of `up`'s controllers over | server thread µs/event (median) | reader and helper threads µs/event (median) | rounds (server / others) |");
  console.log("|---|---:|---:|---|");
  for (const [mode, rs] of results) {
    const rounds = rs.map((x) => `${x.server.toFixed(1)} / ${x.others.toFixed(1)}`).join(", ");
    console.log(`| ${mode} | ${median(rs.map((x) => x.server)).toFixed(1)} | ${median(rs.map((x) => x.others)).toFixed(1)} | ${rounds} |`);
  }
}

if (isMainThread) await main();
else await read(workerData as ReaderData);

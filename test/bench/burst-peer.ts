// bench:e2e's same-run peer of a burst: the burst's requests through a bare node server with nothing behind it, on
// the same cores in the same minute. A node server process answers on one thread, as `up`'s server does: the node
// agents' creates over HTTPS from this process, and the controllers' four requests per CSR over HTTP on a unix-domain
// socket from a thread of its own process, as `up`'s controllers sent them before their in-thread channel (kept so that
// ratios compare across builds; `up` now pays less than this for those four). Each request's JSON body is parsed and a 3 KB JSON
// object answered. The burst's time over the peer's says how far the product is from the transport's floor, in a unit
// that moves with the host (the same burst took 8.8–14.6 s within one hour on this shared machine).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { bareHandler, postRequest } from "./bare-exchange.js";
import { listeningPort, threadCpu } from "./measure.js";
import { inParallel, times } from "../fixtures/parallel.js";

export interface PeerOptions {
  /** The API server's serving certificate, its key, and the CA that clients verify it with. */
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string;
  readonly creates: number;
  readonly createCallers: number;
  readonly controllerRequests: number;
  readonly controllerCallers: number;
}

export interface PeerResult {
  readonly seconds: number;
  /** CPU seconds: the server's thread, the controllers' stand-in and the helpers of its process, this process. */
  readonly server: number;
  readonly others: number;
  readonly clients: number;
}

/** `count` POSTs of the request body from `callers` keep-alive callers; resolves once every answer was read and parsed. */
async function post(count: number, callers: number, options: https.RequestOptions, secure: boolean): Promise<void> {
  await inParallel(times(count), callers, () => postRequest(options, secure, { authorization: "Bearer peer" }));
}

/** The child process: both listeners on its main thread; "go N" on stdin makes its other thread send N requests. */
function serve(certFile: string, keyFile: string, socketPath: string, callers: number): void {
  const handler = bareHandler();
  const tls = https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, handler);
  const local = http.createServer(handler);
  tls.keepAliveTimeout = local.keepAliveTimeout = 60_000;
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { socketPath, callers } });
  worker.on("message", () => process.stdout.write("done\n"));
  local.listen(socketPath, () => tls.listen(0, "127.0.0.1", () => process.stdout.write(`listening on ${(tls.address() as { port: number }).port}\n`)));
  createInterface({ input: process.stdin }).on("line", (line) => worker.postMessage(Number(line.split(" ")[1])));
}

/** The controllers' stand-in: the requests asked for, over one keep-alive agent on the unix-domain socket. */
function controllers(): void {
  const { socketPath, callers } = workerData as { socketPath: string; callers: number };
  const agent = new http.Agent({ keepAlive: true, maxSockets: callers });
  parentPort!.on("message", (count: number) => void post(count, callers, { socketPath, agent }, false).then(() => parentPort!.postMessage("done")));
}

/**
 * One unmeasured pass (connections opened, code optimised, as the burst's warm-up), then the measured one: both sides
 * start together and the clock stops when the last answer of either is read.
 */
export async function transportPeer(o: PeerOptions): Promise<PeerResult> {
  const dir = mkdtempSync(join(tmpdir(), "burst-peer-"));
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve", o.certFile, o.keyFile, join(dir, "peer.sock"), String(o.controllerCallers)], { stdio: ["pipe", "pipe", "inherit"] });
  try {
    const { port, lines } = await listeningPort(child);
    const agent = new https.Agent({ keepAlive: true, maxSockets: o.createCallers, ca: readFileSync(o.caFile) });
    const pass = async (scale: number) => {
      const started = performance.now();
      child.stdin!.write(`go ${Math.round(o.controllerRequests * scale)}\n`);
      await Promise.all([post(Math.round(o.creates * scale), o.createCallers, { host: "127.0.0.1", port, agent }, true), lines.next()]);
      return (performance.now() - started) / 1000;
    };
    await pass(0.2);
    const before = { threads: threadCpu(child.pid), clients: process.cpuUsage() };
    const seconds = await pass(1);
    const after = threadCpu(child.pid);
    const clients = process.cpuUsage(before.clients);
    agent.destroy();
    const server = (after.get("main") ?? NaN) - (before.threads.get("main") ?? NaN);
    const all = [...after].reduce((sum, [name, s]) => sum + s - (before.threads.get(name) ?? 0), 0);
    return { seconds, server, others: all - server, clients: (clients.user + clients.system) / 1e6 };
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!isMainThread) controllers();
else if (process.argv[2] === "serve") serve(process.argv[3]!, process.argv[4]!, process.argv[5]!, Number(process.argv[6]));

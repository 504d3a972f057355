// bench:e2e's floor of the transport: CPU per request (server process + client) of a bare node server that parses a
// JSON body and answers a CSR-sized object, over loopback HTTPS with client certificates (what a remote controller
// pays) and over HTTP on a unix-domain socket (what `up`'s controllers pay). Nothing behind it: no API server logic.
// Then, in one process (both sides' CPU together), the same exchange through fastify (the API server's framework) on a
// unix-domain socket, through `up`'s in-thread channel (and the bare listener through it: fastify's own share) and
// through fastify's `inject` (neither has a socket or HTTP parsing), and the JSON work alone: what the in-process path
// of the co-located controllers saves.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { answerText, bareHandler, postRequest, REQUEST_BODY } from "./bare-exchange.js";
import { cpuSeconds, describeHost, envNumber, timedLoop } from "./measure.js";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONCURRENCY = envNumber("BENCH_CLIENTS", 16);

/** The server side, in its own process: `serve https CERT KEY CA` or `serve unix PATH`. */
function serve(mode: string, args: readonly string[]): void {
  const handler = bareHandler();
  const [a, b, c] = args;
  const server = mode === "https" ? https.createServer({ cert: readFileSync(a!), key: readFileSync(b!), ca: readFileSync(c!), requestCert: true, rejectUnauthorized: true }, handler) : http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  const ready = () => {
    const address = server.address();
    process.stdout.write(`listening on ${typeof address === "object" && address ? address.port : a}\n`);
  };
  if (mode === "https") server.listen(0, "127.0.0.1", ready);
  else server.listen(a!, ready);
}

/** Requests from CONCURRENCY keep-alive callers for SECONDS: requests per second and CPU µs per request of each side. */
async function measure(pid: number, options: https.RequestOptions, secure: boolean): Promise<{ rps: number; server: number; client: number }> {
  const agent = secure ? new https.Agent({ ...(options as https.AgentOptions), keepAlive: true, maxSockets: CONCURRENCY }) : new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const one = () => postRequest({ ...options, agent }, secure);
  let serverBefore = 0;
  // One warm-up round first: connections (and TLS sessions) are made before the clock.
  const loop = await timedLoop(CONCURRENCY, SECONDS, one, () => (serverBefore = cpuSeconds(pid)));
  const server = cpuSeconds(pid) - serverBefore;
  agent.destroy();
  return { rps: loop.requests / loop.seconds, server: (server * 1e6) / loop.requests, client: loop.clientMicros };
}

function start(args: readonly string[]): Promise<{ pid: number; stop(): void; port: string }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve", ...args], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.stdout.once("data", (d: Buffer) => resolve({ pid: child.pid!, port: /listening on (\S+)/.exec(String(d))![1]!, stop: () => child.kill() }));
  });
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const ANSWER = answerText();
const THROUGH_CHANNEL = "fastify through the in-thread channel (no socket, no HTTP parsing)";
const BARE_THROUGH_CHANNEL = "a bare request listener through the in-thread channel (no framework)";

/** CPU µs per request of this process (both sides) for each in-process way of making the same exchange. */
async function inProcess(dir: string): Promise<Record<string, number>> {
  const { default: Fastify } = await import("fastify");
  const app = Fastify({ logger: false });
  // As the API server: bodies stay raw until the handler decodes them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
  app.post("/x", async (req, reply) => {
    JSON.parse((req.body as Buffer).toString("utf8"));
    return reply.code(201).type("application/json").send(ANSWER);
  });
  const socketPath = join(dir, "fastify.sock");
  await app.listen({ path: socketPath });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  // `up`'s in-thread channel into the same fastify: here both ends on this thread (in `up` the client is on another).
  const { serveLocalChannels } = await import("../../src/apiserver/bootstrap/local-channel.js");
  const { ChannelTransport } = await import("../../src/client/channel-transport.js");
  const { silentLogger } = await import("../../src/logger.js");
  const channels = serveLocalChannels(app.server, silentLogger());
  const channel = new ChannelTransport(channels.open());
  // The same channel into the peers' bare request listener: what fastify itself adds to a channel request.
  const bareChannels = serveLocalChannels(http.createServer(bareHandler(ANSWER)), silentLogger());
  const bareChannel = new ChannelTransport(bareChannels.open());
  // The answer read as the REST client reads it: its text as handed over (no bytes made and decoded again).
  const overChannel = async (c: InstanceType<typeof ChannelTransport>) => {
    const answer = await c.request({ method: "POST", path: "/x", headers: { "Content-Type": "application/json" }, body: REQUEST_BODY });
    return JSON.parse(answer.text ?? answer.body.toString("utf8"));
  };
  const ways: Record<string, () => Promise<unknown>> = {
    "fastify, HTTP on a unix-domain socket": () => postRequest({ socketPath, agent }, false),
    [THROUGH_CHANNEL]: () => overChannel(channel),
    [BARE_THROUGH_CHANNEL]: () => overChannel(bareChannel),
    "fastify inject (no socket, no HTTP parsing)": async () =>
      JSON.parse((await app.inject({ method: "POST", url: "/x", headers: { "content-type": "application/json" }, payload: REQUEST_BODY })).payload),
    "the exchange's JSON work alone": async () => JSON.parse(JSON.parse(REQUEST_BODY.toString("utf8")) && ANSWER),
  };
  const out: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, once] of Object.entries(ways)) out[name]!.push((await timedLoop(CONCURRENCY, SECONDS, once)).clientMicros);
    }
  } finally {
    agent.destroy();
    channels.close();
    bareChannels.close();
    await app.close();
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, median(v)]));
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "transport-floor-"));
  // The cluster fixture's PKI: an API server certificate and an admin client certificate from one CA.
  const { startCluster } = await import("../controller/controllers/cluster.js");
  const { restConfigFromConnection } = await import("../../src/client/connection-config.js");
  const c = await startCluster();
  const admin = await restConfigFromConnection({ kubeconfig: c.adminConfig });
  const pki = join(c.dataDir, "pki");
  const rows = { https: [] as { rps: number; server: number; client: number }[], unix: [] as { rps: number; server: number; client: number }[] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const tls = await start(["https", join(pki, "apiserver.crt"), join(pki, "apiserver.key"), c.caFiles.certFile]);
      rows.https.push(await measure(tls.pid, { host: "127.0.0.1", port: Number(tls.port), ca: readFileSync(c.caFiles.certFile), cert: admin.tls.cert, key: admin.tls.key }, true));
      tls.stop();
      const socketPath = join(dir, "floor.sock");
      rmSync(socketPath, { force: true });
      const unix = await start(["unix", socketPath]);
      rows.unix.push(await measure(unix.pid, { socketPath }, false));
      unix.stop();
    }
  } finally {
    await c.stop();
  }
  let local: Record<string, number>;
  try {
    local = await inProcess(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`transport floor — ${new Date().toISOString()}, node ${process.version}; ${CONCURRENCY} keep-alive callers, ${SECONDS} s windows, median of ${ROUNDS} interleaved rounds`);
  console.log(describeHost());
  console.log("| transport | req/s | server CPU µs/req | client CPU µs/req | both |");
  console.log("|---|---|---|---|---|");
  for (const [name, r] of [["HTTPS on loopback, client certificate", rows.https], ["HTTP on a unix-domain socket", rows.unix]] as const) {
    const s = median(r.map((x) => x.server));
    const cl = median(r.map((x) => x.client));
    console.log(`| ${name} | ${median(r.map((x) => x.rps)).toFixed(0)} | ${s.toFixed(0)} | ${cl.toFixed(0)} | ${(s + cl).toFixed(0)} |`);
  }
  console.log("\nIn one process (both sides together):\n| way | CPU µs/req |\n|---|---|");
  for (const [name, micros] of Object.entries(local)) console.log(`| ${name} | ${micros.toFixed(1)} |`);
  console.log(`fastify's own share of a channel request: ${(local[THROUGH_CHANNEL]! - local[BARE_THROUGH_CHANNEL]!).toFixed(1)} µs`);
}

if (process.argv[2] === "serve") serve(process.argv[3]!, process.argv.slice(4));
else await main();

// bench:name-watchers' same-run peer of a node agent's start (a LIST, then a watch, each on a new TLS connection with
// its client certificate): the same connections and requests to a bare node HTTPS server with the API server's own
// certificates and nothing behind it, in a process of its own; the second request of each start stays open as a watch
// does, until every start is made. What the TLS handshakes and the open connections alone cost on this host.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { ClientRequest, IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import type { SecureContext } from "node:tls";
import { fileURLToPath } from "node:url";
import { bareHandler } from "./bare-exchange.js";
import { cpuSeconds, listeningPort } from "./measure.js";
import { inParallel, times } from "../fixtures/parallel.js";

export interface StartPeerOptions {
  /** The API server's serving certificate and key, and the CA its client certificates chain to. */
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile: string;
  /** The node agents' client certificate, as the bench's watchers present it. */
  readonly secureContext: SecureContext;
  readonly starts: number;
  /** Starts under way at once (the watchers' STARTING). */
  readonly concurrency: number;
}

/**
 * The child process: a TLS server asking for client certificates as the API server does. `/watch` is answered with
 * a watch's headers and held open; anything else with 3 KB of JSON.
 */
function serve(certFile: string, keyFile: string, caFile: string): void {
  const bare = bareHandler();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== "/watch") return bare(req, res);
    res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
  };
  const server = https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile), ca: readFileSync(caFile), requestCert: true, rejectUnauthorized: false }, handler);
  server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on ${(server.address() as { port: number }).port}\n`));
}

/**
 * The peer server's CPU µs per start (two connections: a GET answered, then a watch held open), after an unmeasured
 * pass of a fifth whose watches are closed first.
 */
export async function startPeer(o: StartPeerOptions): Promise<number> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve", o.certFile, o.keyFile, o.clientCaFile], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const { port } = await listeningPort(child);
    // As the watchers' agent: no keep-alive, so every request is a connection of its own (TLS sessions resumed alike),
    // and no cap that the held watches would fill.
    const agent = new https.Agent({ keepAlive: false, maxSockets: Infinity, secureContext: o.secureContext });
    const held: ClientRequest[] = [];
    /** A GET of `path`: resolves once the answer is read, or for `/watch` once its headers came (it stays open). */
    const get = (path: string) =>
      new Promise<void>((resolve, reject) => {
        const req = https.request({ host: "127.0.0.1", port, path, agent, rejectUnauthorized: false }, (res) => {
          if (path === "/watch") {
            held.push(req);
            res.on("error", () => undefined);
            return resolve();
          }
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve(void JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        });
        req.on("error", reject);
        req.end();
      });
    const closeHeld = () => {
      for (const req of held.splice(0)) req.destroy();
    };
    const pass = async (count: number) => {
      await inParallel(times(count), o.concurrency, async () => {
        await get("/x");
        await get("/watch");
      });
    };
    await pass(Math.ceil(o.starts / 5));
    closeHeld();
    const before = cpuSeconds(child.pid);
    await pass(o.starts);
    const micros = ((cpuSeconds(child.pid) - before) * 1e6) / o.starts;
    closeHeld();
    agent.destroy();
    return micros;
  } finally {
    child.kill();
  }
}

if (process.argv[2] === "serve") serve(process.argv[3]!, process.argv[4]!, process.argv[5]!);

// bench:name-watchers' same-run peer of a node agent's start (a LIST, then a watch, each on a new TLS connection with
// its client certificate): the same connections and requests to a bare node HTTPS server with the API server's own
// certificates and nothing behind it, in a process of its own. What the TLS handshakes alone cost on this host.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import https from "node:https";
import { createInterface } from "node:readline";
import type { SecureContext } from "node:tls";
import { fileURLToPath } from "node:url";
import { bareHandler } from "./bare-exchange.js";
import { cpuSeconds } from "./measure.js";

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

/** The child process: a TLS server asking for client certificates as the API server does, answering every GET. */
function serve(certFile: string, keyFile: string, caFile: string): void {
  const server = https.createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile), ca: readFileSync(caFile), requestCert: true, rejectUnauthorized: false }, bareHandler());
  server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on ${(server.address() as { port: number }).port}\n`));
}

/** The peer server's CPU µs per start (two connections, one GET each), after an unmeasured pass of a fifth. */
export async function startPeer(o: StartPeerOptions): Promise<number> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "serve", o.certFile, o.keyFile, o.clientCaFile], { stdio: ["ignore", "pipe", "inherit"] });
  try {
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const port = Number(/listening on (\d+)/.exec(String((await lines.next()).value))?.[1]);
    // As the watchers' agent: no keep-alive, so every request is a connection of its own (TLS sessions resumed alike).
    const agent = new https.Agent({ keepAlive: false, maxSockets: o.concurrency * 2, secureContext: o.secureContext });
    const get = () =>
      new Promise<void>((resolve, reject) => {
        const req = https.request({ host: "127.0.0.1", port, path: "/x", agent, rejectUnauthorized: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve(void JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        });
        req.on("error", reject);
        req.end();
      });
    const pass = async (count: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: o.concurrency }, async () => {
        for (; next < count; next++) {
          await get();
          await get();
        }
      }));
    };
    await pass(Math.ceil(o.starts / 5));
    const before = cpuSeconds(child.pid);
    await pass(o.starts);
    const micros = ((cpuSeconds(child.pid) - before) * 1e6) / o.starts;
    agent.destroy();
    return micros;
  } finally {
    child.kill();
  }
}

if (process.argv[2] === "serve") serve(process.argv[3]!, process.argv[4]!, process.argv[5]!);

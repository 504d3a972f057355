// Load generator for bench:requests, run as its own process so its CPU is not the server's: `concurrency` keep-alive
// HTTPS connections (client certificate) repeat one request for `seconds`; prints one JSON line with the counts.
import https from "node:https";
import { createSecureContext } from "node:tls";
import { timedLoop, type LoopResult } from "./measure.js";

export interface LoadSpec {
  readonly url: string;
  readonly method: string;
  readonly body?: string;
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string };
  readonly concurrency: number;
  readonly seconds: number;
}

export interface LoadResult extends LoopResult {
  /** Responses by status code. */
  readonly codes: Record<string, number>;
}

async function run(spec: LoadSpec): Promise<LoadResult> {
  const url = new URL(spec.url);
  // A prebuilt context, as the platform-ca client does: PEM texts in the agent's options would be concatenated into
  // its pool name on every request.
  const agent = new https.Agent({ keepAlive: true, maxSockets: spec.concurrency, secureContext: createSecureContext(spec.tls) });
  const body = spec.body === undefined ? undefined : Buffer.from(spec.body);
  const codes: Record<string, number> = {};
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = { accept: "application/json" };
      if (body) Object.assign(headers, { "content-type": "application/json", "content-length": String(body.length) });
      const req = https.request({ host: url.hostname, port: url.port, path: url.pathname, method: spec.method, agent, headers }, (res) => {
        codes[res.statusCode ?? 0] = (codes[res.statusCode ?? 0] ?? 0) + 1;
        res.on("data", () => undefined);
        res.on("end", resolve);
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  const loop = await timedLoop(spec.concurrency, spec.seconds, once, () => {
    for (const k of Object.keys(codes)) delete codes[k];
  });
  agent.destroy();
  return { ...loop, codes };
}

if (process.argv[2] !== undefined) {
  const result = await run(JSON.parse(process.argv[2]) as LoadSpec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// Load generator for bench:requests, run as its own process so its CPU is not the server's: `concurrency` keep-alive
// connections (HTTPS with a client certificate, or plain HTTP) repeat one request for `seconds`, or send distinct CSR
// bodies made before the clock; prints one JSON line with the counts.
import { spawn } from "node:child_process";
import http from "node:http";
import https from "node:https";
import { createInterface } from "node:readline";
import { createSecureContext } from "node:tls";
import { fileURLToPath } from "node:url";
import { distinctCsrPems } from "./identity.js";
import { cpuSeconds, timedLoop, type LoopResult } from "./measure.js";

/** Where `body` holds this text, each request gets the base64 of a CSR of its own (the verified-CSR memo never hits). */
export const CSR_PLACEHOLDER = "__DISTINCT_CSR__";

export interface LoadSpec {
  readonly url: string;
  readonly method: string;
  readonly body?: string;
  /** Distinct CSRs to make for CSR_PLACEHOLDER in `body`; the run fails should it need more. */
  readonly distinctCsrs?: number;
  /** Absent for a plain http:// URL; `cert` and `key` absent for a client that authenticates with `bearer` alone. */
  readonly tls?: { readonly ca: string; readonly cert?: string; readonly key?: string };
  /** A bearer token sent with every request (a bootstrap token, a ServiceAccount's). */
  readonly bearer?: string;
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
  const agent = spec.tls
    ? new https.Agent({ keepAlive: true, maxSockets: spec.concurrency, secureContext: createSecureContext(spec.tls) })
    : new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const send = spec.tls ? https.request : http.request;
  const bodies = await requestBodies(spec);
  let sent = 0;
  const nextBody = (): Buffer | undefined => {
    if (!bodies || !spec.distinctCsrs) return bodies?.[0];
    if (sent === bodies.length) throw new Error(`all ${bodies.length} distinct CSRs were sent before the time was up; raise distinctCsrs`);
    return bodies[sent++];
  };
  const codes: Record<string, number> = {};
  const once = () =>
    new Promise<void>((resolve, reject) => {
      const body = nextBody();
      const headers: Record<string, string> = { accept: "application/json", ...(spec.bearer !== undefined && { authorization: `Bearer ${spec.bearer}` }) };
      if (body) Object.assign(headers, { "content-type": "application/json", "content-length": String(body.length) });
      const req = send({ host: url.hostname, port: url.port, path: url.pathname, method: spec.method, agent, headers }, (res) => {
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

/** The request bodies: the one body, or one per distinct CSR (made here, before the clock starts). */
async function requestBodies(spec: LoadSpec): Promise<Buffer[] | undefined> {
  if (spec.body === undefined) return undefined;
  if (!spec.distinctCsrs) return [Buffer.from(spec.body)];
  const pems = await distinctCsrPems(spec.distinctCsrs, `load-${process.pid}`);
  return pems.map((pem) => Buffer.from(spec.body!.replace(CSR_PLACEHOLDER, Buffer.from(pem).toString("base64"))));
}

/** Runs this file as a load process with `spec` and returns its figures with the CPU per request of process `pid`. */
export async function measureLoad(pid: number, spec: LoadSpec): Promise<LoadResult & { serverMicros: number }> {
  const before = cpuSeconds(pid);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), JSON.stringify(spec)], { stdio: ["ignore", "pipe", "inherit"] });
  let line = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  for await (const l of createInterface({ input: child.stdout! })) line = l;
  const used = cpuSeconds(pid) - before;
  const code = await exited;
  // Its error is on this process's stderr already: say which step failed rather than fail to read its figures.
  if (code !== 0 || line === "") throw new Error(`the load process for ${spec.method} ${spec.url} failed (exit code ${code})`);
  const result = JSON.parse(line) as LoadResult;
  // /proc counts in 10 ms ticks; the warm-up round falls inside the window too, which the request count leaves out (small).
  return { ...result, serverMicros: (used * 1e6) / result.requests };
}

if (process.argv[2] !== undefined && process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await run(JSON.parse(process.argv[2]) as LoadSpec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

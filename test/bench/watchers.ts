// N watch streams on a collection for the benchmarks' fan-out figures: when each watcher received each object's event.
import { request as httpRequest, Agent as HttpAgent, type ClientRequest } from "node:http";
import { request as httpsRequest, Agent as HttpsAgent } from "node:https";
import type { SecureContext } from "node:tls";
import { httpCall } from "./insecure-server.js";

export interface WatcherSet {
  /** The performance.now() times at which `count` watchers had received the event of object `name` (waits up to 60 s). */
  arrivals(name: string, count: number): Promise<number[]>;
  close(): void;
}

export interface WatcherOptions {
  /** http://… or https://… (then with `secureContext` holding the client certificate). */
  readonly base: string;
  /** The collection path. */
  readonly path: string;
  readonly selector: string;
  readonly count: number;
  /**
   * Instead of the label selector: watcher i watches only the object named `names[i]` (a field selector on
   * metadata.name, as a node agent waits for its own CSR); `count` is then the number of names.
   */
  readonly names?: readonly string[];
  readonly secureContext?: SecureContext;
}

export const STARTING = 128;

/** Opens `count` watches from the collection's current revision (a LIST of one item gives it). */
export async function openWatchers(o: WatcherOptions): Promise<WatcherSet> {
  const https = o.base.startsWith("https:");
  const count = o.names?.length ?? o.count;
  const agent = https ? new HttpsAgent({ keepAlive: false, maxSockets: count + 1, secureContext: o.secureContext }) : new HttpAgent({ keepAlive: false, maxSockets: count + 1 });
  const listed = await httpCall(agent as HttpAgent, o.base, "GET", `${o.path}?limit=1`);
  if (listed.status !== 200) throw new Error(`list answered ${listed.status}: ${listed.text.slice(0, 300)}`);
  const rv = (JSON.parse(listed.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const received = new Map<string, number[]>();
  // A watcher of one name starts as an informer does (upstream's kubelet waiting for its CSR): a LIST with its field
  // selector, then a watch from that list's revision.
  const url = async (i: number): Promise<string> => {
    if (!o.names) return `${o.base}${o.path}?watch=1&resourceVersion=${rv}&labelSelector=${encodeURIComponent(o.selector)}`;
    const selector = `fieldSelector=${encodeURIComponent(`metadata.name=${o.names[i]}`)}`;
    const own = await httpCall(agent as HttpAgent, o.base, "GET", `${o.path}?${selector}`);
    if (own.status !== 200) throw new Error(`list answered ${own.status}: ${own.text.slice(0, 300)}`);
    return `${o.base}${o.path}?watch=1&resourceVersion=${(JSON.parse(own.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion}&${selector}`;
  };
  const send = https ? httpsRequest : httpRequest;
  const open = (i: number) =>
        url(i).then((target) => new Promise<ClientRequest>((resolve, reject) => {
          const req = send(target, { agent }, (res) => {
            if (res.statusCode !== 200) reject(new Error(`watch answered ${res.statusCode}`));
            let buf = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => {
              const at = performance.now();
              buf += chunk;
              for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
                const name = /"name":"([^"]+)"/.exec(buf.slice(0, nl))?.[1];
                buf = buf.slice(nl + 1);
                if (name) (received.get(name) ?? received.set(name, []).get(name)!).push(at);
              }
            });
            res.on("error", () => undefined);
            resolve(req);
          });
          req.on("error", reject);
          req.end();
        }));
  // At most STARTING connections being set up at once: thousands of simultaneous handshakes overflow the server's
  // listen backlog (connections reset), which no client of one agent each would do.
  const streams: ClientRequest[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(STARTING, count) }, async () => {
    for (let i = next++; i < count; i = next++) streams.push(await open(i));
  }));
  return {
    async arrivals(name, count) {
      for (const until = performance.now() + 60_000; (received.get(name)?.length ?? 0) < count; ) {
        if (performance.now() > until) throw new Error(`only ${received.get(name)?.length ?? 0} of ${count} watchers saw ${name}`);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      return received.get(name)!;
    },
    close() {
      for (const s of streams) s.destroy();
      agent.destroy();
    },
  };
}

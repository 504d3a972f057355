// HTTP CONNECT tunnels: the one way a connection is opened through a proxy (the cluster `proxy-url` agent here, and the
// API server's egress selection), over TCP, TLS or a Unix socket to the proxy.
import { Buffer } from "node:buffer";
import http from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import tls from "node:tls";

type Callback = (err: Error | null, socket: Duplex) => void;

export interface TunnelOptions {
  /** How the proxy is reached: `host`/`port`, or `socketPath`; with `secure`, TLS (`ca`, `cert`, `key`, `servername`). */
  readonly proxy: https.RequestOptions;
  readonly secure?: boolean;
  /** Names the proxy in errors. */
  readonly proxyName: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** Opens a tunnel to `authority` (`host:port`); rejects with ECONNREFUSED naming the proxy when it answers other than 200. */
export function openTunnel(authority: string, o: TunnelOptions): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const request = o.secure ? https.request : http.request;
    const connect = request({
      ...o.proxy,
      method: "CONNECT",
      path: authority,
      headers: { Host: authority, ...o.headers },
      agent: false,
      ...(o.signal && { signal: o.signal }),
      ...(o.timeoutMs !== undefined && { timeout: o.timeoutMs }),
    });
    connect.once("timeout", () => connect.destroy(new Error(`proxy ${o.proxyName} did not open a tunnel to ${authority} within ${o.timeoutMs} ms`)));
    connect.once("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        const err: NodeJS.ErrnoException = new Error(`proxy ${o.proxyName} refused CONNECT to ${authority}: ${res.statusCode} ${res.statusMessage ?? ""}`.trim());
        err.code = "ECONNREFUSED";
        return reject(err);
      }
      socket.setTimeout(0);
      resolve(socket);
    });
    connect.once("error", reject);
    connect.end();
  });
}

/** Node's Agent accepts an asynchronous createConnection: return nothing and call back with the socket. */
class TunnelAgent extends https.Agent {
  readonly #proxy: URL;

  constructor(options: https.AgentOptions, proxy: URL) {
    super(options);
    this.#proxy = proxy;
  }

  override createConnection(options: https.RequestOptions, callback?: Callback): Duplex | null | undefined {
    const headers: Record<string, string> = {};
    if (this.#proxy.username) {
      const user = `${decodeURIComponent(this.#proxy.username)}:${decodeURIComponent(this.#proxy.password)}`;
      headers["Proxy-Authorization"] = `Basic ${Buffer.from(user).toString("base64")}`;
    }
    openTunnel(`${options.host}:${options.port}`, { proxy: { host: this.#proxy.hostname, port: this.#proxy.port || 80 }, proxyName: this.#proxy.host, headers }).then(
      (socket) => callback?.(null, tls.connect({ ...(options as tls.ConnectionOptions), socket })),
      (err: Error) => callback?.(err, undefined as unknown as Duplex),
    );
    return undefined;
  }
}

export function tunnelAgent(options: https.AgentOptions, proxy: URL): https.Agent {
  return new TunnelAgent(options, proxy);
}

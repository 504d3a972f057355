// An https Agent that reaches the server through an HTTP proxy's CONNECT tunnel (cluster `proxy-url`).
import { Buffer } from "node:buffer";
import http from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";
import tls from "node:tls";

type Callback = (err: Error | null, socket: Duplex) => void;

/** Node's Agent accepts an asynchronous createConnection: return nothing and call back with the socket. */
class TunnelAgent extends https.Agent {
  readonly #proxy: URL;

  constructor(options: https.AgentOptions, proxy: URL) {
    super(options);
    this.#proxy = proxy;
  }

  override createConnection(options: https.RequestOptions, callback?: Callback): Duplex | null | undefined {
    const authority = `${options.host}:${options.port}`;
    const headers: Record<string, string> = { Host: authority };
    if (this.#proxy.username) {
      const user = `${decodeURIComponent(this.#proxy.username)}:${decodeURIComponent(this.#proxy.password)}`;
      headers["Proxy-Authorization"] = `Basic ${Buffer.from(user).toString("base64")}`;
    }
    const connect = http.request({
      host: this.#proxy.hostname,
      port: this.#proxy.port || 80,
      method: "CONNECT",
      path: authority,
      headers,
      agent: false,
    });
    connect.once("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        const err: NodeJS.ErrnoException = new Error(`proxy ${this.#proxy.host} refused CONNECT to ${authority}: ${res.statusCode} ${res.statusMessage ?? ""}`.trim());
        err.code = "ECONNREFUSED";
        callback?.(err, socket);
        return;
      }
      callback?.(null, tls.connect({ ...(options as tls.ConnectionOptions), socket }));
    });
    connect.once("error", (err) => callback?.(err, undefined as unknown as Duplex));
    connect.end();
    return undefined;
  }
}

export function tunnelAgent(options: https.AgentOptions, proxy: URL): https.Agent {
  return new TunnelAgent(options, proxy);
}

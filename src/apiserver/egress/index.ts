// Egress selection (EgressSelectorConfiguration): one dialer per selection, through which the server's outbound connections leave.
//
// How a client uses it (the selector is built once at start from `--egress-selector-config-file`; without the file,
// every selection dials directly):
//
//   const egress = await createEgressSelector(loaded?.config);        // or EgressSelector.direct()
//   const dialer = egress.dialer("controlplane");                     // "controlplane" | "etcd" | "cluster"
//   https.request(url, { agent: dialer.httpsAgent({ ca }) });         // webhooks, OIDC discovery (TLS to the target over the tunnel)
//   http.request(url, { agent: dialer.httpAgent() });
//   const socket = await dialer.connect(host, port);                  // a raw tunnel (net.Socket) to the target
//   const { address, close } = await dialer.forward(host, port);     // a loopback address for clients that dial by
//                                                                     // address (@grpc/grpc-js: etcd, KMS), closed at stop
//
// Which selection: `controlplane` for webhooks (audit, authentication, authorization, admission) and KMS, `etcd` for the
// storage, `cluster` for traffic to the workloads (as upstream). A dialer never falls back to a direct connection:
// when the proxy cannot be reached, the connection fails with IO_ERROR naming the proxy and the target.
import { readFile } from "node:fs/promises";
import { Agent as HttpAgent, type AgentOptions as HttpAgentOptions, type ClientRequestArgs } from "node:http";
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions, type RequestOptions } from "node:https";
import type { Duplex } from "node:stream";
import { connect as netConnect, createServer, isIP, type Socket } from "node:net";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { EGRESS_NAMES, type EgressConnection, type EgressName, type EgressSelectorConfig } from "../../config/egress-selector.js";
import { PlatformError } from "../../errors.js";
import { httpConnect, type ProxyEndpoint } from "./http-connect.js";

export type { EgressName };

/** How long a tunnel may take to open (proxy connect, TLS, CONNECT answer) by default. */
export const DEFAULT_DIAL_TIMEOUT_MS = 30_000;

export interface DialOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export interface EgressDialer {
  readonly name: EgressName;
  /** `Direct`, or `HTTPConnect` with where the proxy is (`http://…`, `https://…`, `unix:/path`). */
  readonly description: string;
  /** No proxy: connections go straight to their target (a client with its own dialing may keep it). */
  readonly direct: boolean;
  /** A stream to `host:port` (direct, or a tunnel through the proxy). TLS to the target is the caller's. */
  connect(host: string, port: number, options?: DialOptions): Promise<Socket>;
  /** An agent for `http.request` whose connections are made by `connect`. */
  httpAgent(options?: HttpAgentOptions): HttpAgent;
  /** An agent for `https.request`: TLS to the target (with the request's `ca`, `cert`, `servername`…) over `connect`'s stream. */
  httpsAgent(options?: HttpsAgentOptions): HttpsAgent;
  /**
   * A loopback listener that forwards each accepted connection to `host:port` through this egress. A failed dial
   * closes the accepted connection; `onDialError` hears why (the client behind the listener sees only the close).
   */
  forward(host: string, port: number, onDialError?: (err: Error) => void): Promise<{ readonly address: string; close(): Promise<void> }>;
}

type Dial = (host: string, port: number, options?: DialOptions) => Promise<Socket>;

const directDial: Dial = (host, port, options = {}) =>
  new Promise((resolve, reject) => {
    const socket = netConnect({ host, port, ...(options.signal && { signal: options.signal }), timeout: options.timeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS });
    socket.once("timeout", () => socket.destroy(new PlatformError("IO_ERROR", `cannot reach ${host}:${port}: no connection within ${options.timeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS} ms`)));
    socket.once("connect", () => {
      socket.setTimeout(0);
      socket.removeAllListeners("timeout");
      resolve(socket);
    });
    socket.once("error", reject);
  });

/** Agents whose connections come from `dial`: node calls createConnection with a callback, answered once the stream is open. */
class DialingHttpAgent extends HttpAgent {
  constructor(private readonly dial: Dial, options?: HttpAgentOptions) {
    super(options);
  }
  override createConnection(options: ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    this.dial(options.host ?? "localhost", Number(options.port ?? 80)).then((s) => callback?.(null, s), (err: Error) => callback?.(err, undefined as never));
    return undefined;
  }
}

class DialingHttpsAgent extends HttpsAgent {
  constructor(private readonly dial: Dial, options?: HttpsAgentOptions) {
    super(options);
  }
  override createConnection(options: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    const host = options.host ?? "localhost";
    const tlsOptions = options as ConnectionOptions;
    this.dial(host, Number(options.port ?? 443)).then(
      (raw) => callback?.(null, tlsConnect({ ...tlsOptions, socket: raw, servername: tlsOptions.servername || (isIP(host) ? undefined : host) })),
      (err: Error) => callback?.(err, undefined as never),
    );
    return undefined;
  }
}

function dialer(name: EgressName, description: string, dial: Dial): EgressDialer {
  return {
    name,
    description,
    direct: dial === directDial,
    connect: dial,
    httpAgent: (options) => new DialingHttpAgent(dial, options),
    httpsAgent: (options) => new DialingHttpsAgent(dial, options),
    forward(host, port, onDialError) {
      const open = new Set<Socket>();
      const server = createServer((local) => {
        open.add(local);
        local.once("close", () => open.delete(local));
        dial(host, port).then(
          (remote) => {
            open.add(remote);
            remote.once("close", () => open.delete(remote));
            local.pipe(remote).pipe(local);
            remote.once("error", () => local.destroy());
            local.once("error", () => remote.destroy());
          },
          (err: Error) => {
            local.destroy();
            onDialError?.(err);
          },
        );
      });
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
          const bound = server.address() as { port: number };
          resolve({
            address: `127.0.0.1:${bound.port}`,
            close: () => new Promise<void>((done) => {
              for (const s of open) s.destroy();
              server.close(() => done());
            }),
          });
        });
      });
    },
  };
}

/** The proxy of an HTTPConnect selection, with its TLS files read (a missing one fails the start, naming it). */
async function proxyEndpoint(connection: Extract<EgressConnection, { proxyProtocol: "HTTPConnect" }>): Promise<ProxyEndpoint> {
  const t = connection.transport;
  if ("uds" in t) return { kind: "uds", path: t.uds.udsName, url: `unix:${t.uds.udsName}` };
  const url = new URL(t.tcp.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  if (url.protocol === "http:" || !t.tcp.tlsConfig) return { kind: "tcp", host, port, url: t.tcp.url };
  const read = (path: string, what: string) =>
    readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
      throw new PlatformError("IO_ERROR", `cannot read the egress proxy's ${what} ${path}: ${err.code ?? String(err)}`, { cause: err });
    });
  const tls = t.tcp.tlsConfig;
  const [ca, cert, key] = await Promise.all([tls.caBundle !== undefined ? read(tls.caBundle, "caBundle") : undefined, read(tls.clientCert, "clientCert"), read(tls.clientKey, "clientKey")]);
  return { kind: "tls", host, port, url: t.tcp.url, ...(ca !== undefined && { ca }), cert, key };
}

/** The dialers of every selection. */
export class EgressSelector {
  readonly #dialers: ReadonlyMap<EgressName, EgressDialer>;

  private constructor(dialers: ReadonlyMap<EgressName, EgressDialer>) {
    this.#dialers = dialers;
  }

  /** Every selection dials directly (no configuration file). */
  static direct(): EgressSelector {
    return new EgressSelector(new Map(EGRESS_NAMES.map((n) => [n, dialer(n, "Direct", directDial)])));
  }

  /** @internal Use createEgressSelector. */
  static of(dialers: ReadonlyMap<EgressName, EgressDialer>): EgressSelector {
    return new EgressSelector(dialers);
  }

  dialer(name: EgressName): EgressDialer {
    const d = this.#dialers.get(name);
    if (!d) throw new PlatformError("INVALID_OPTION", `expected an egress selection name (${EGRESS_NAMES.join(", ")}), got ${JSON.stringify(name)}`);
    return d;
  }
}

/** The selector for a loaded configuration (selections it does not name dial directly); reads the TLS files now. */
export async function createEgressSelector(config?: EgressSelectorConfig): Promise<EgressSelector> {
  if (!config) return EgressSelector.direct();
  const dialers = new Map<EgressName, EgressDialer>();
  for (const name of EGRESS_NAMES) {
    const connection = config.selections.get(name);
    if (!connection || connection.proxyProtocol === "Direct") {
      dialers.set(name, dialer(name, "Direct", directDial));
      continue;
    }
    const proxy = await proxyEndpoint(connection);
    const dial: Dial = (host, port, options = {}) => httpConnect(proxy, host, port, options.timeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS, options.signal);
    dialers.set(name, dialer(name, `HTTPConnect ${proxy.url}`, dial));
  }
  return EgressSelector.of(dialers);
}

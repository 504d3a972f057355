// A thin etcd v3 client: unary calls on a bare HTTP/2 session per member (unary.ts), watch streams on @grpc/grpc-js;
// calls fail over to the next member when one is unreachable, and watch streams are opened on whichever member answers
// (docs/architecture.md says why not `etcd3`).
import { credentials, Metadata, type ChannelCredentials, type Client, type ClientDuplexStream, type MethodDefinition } from "@grpc/grpc-js";
import { PlatformError } from "../../../errors.js";
import type { EgressDialer } from "../../egress/index.js";
import { etcdServices, type EtcdWatchResponse } from "./proto.js";
import { GRPC, UnaryChannel, type GrpcCallError } from "./unary.js";

export interface EtcdTls {
  /** PEM of the CA that signed the members' serving certificates. */
  readonly ca?: Buffer;
  /** Client certificate and key (PEM) when the members require client authentication. */
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

export interface EtcdClientOptions {
  /** Member URLs: `https://host:port` (TLS) or `http://host:port`. */
  readonly endpoints: readonly string[];
  readonly tls?: EtcdTls;
  /** Deadline of one unary call; default 10 s. */
  readonly callTimeoutMs?: number;
  /** The `etcd` egress selection: with HTTPConnect every member is reached through the proxy; Direct or absent, directly. */
  readonly egress?: EgressDialer;
}

/** A loopback forwarder to one member through the egress proxy (grpc-js dials by address and has no socket hook). */
type Route = Awaited<ReturnType<EgressDialer["forward"]>>;

type WatchClient = Client & { Watch(metadata: Metadata): ClientDuplexStream<unknown, EtcdWatchResponse> };
export type KvMethod = "Range" | "Put" | "DeleteRange" | "Txn" | "Compact" | "LeaseGrant";

interface Member {
  readonly url: string;
  readonly kv: UnaryChannel;
  readonly watch: WatchClient;
}

/** How each KV method's request and answer cross the wire (the generated definitions' serializers and path). */
type KvMethods = Record<KvMethod, MethodDefinition<unknown, unknown>>;

/** The last failed tunnel to each routed member: gRPC sees only a closed connection, this says why. */
interface DialFailure {
  readonly at: number;
  readonly error: Error;
}

export class EtcdClient {
  readonly #members: Member[];
  readonly #timeoutMs: number;
  /** The member calls go to first; moves on when it fails. */
  #current = 0;
  #closed = false;
  readonly #routes: readonly Route[];
  readonly #dialFailures: Map<string, DialFailure>;
  readonly #methods: KvMethods;

  /** A client whose members are reached as the egress selection says (forwarders are opened first when it proxies). */
  static async open(options: EtcdClientOptions): Promise<EtcdClient> {
    const egress = options.egress;
    if (!egress || egress.direct) return new EtcdClient(options);
    const parsed = options.endpoints.map(parseEndpoint);
    const routes: Route[] = [];
    const failures = new Map<string, DialFailure>();
    try {
      for (const [i, e] of parsed.entries()) routes.push(await egress.forward(e.host, e.port, (error) => failures.set(options.endpoints[i]!, { at: Date.now(), error })));
    } catch (err) {
      await Promise.all(routes.map((r) => r.close()));
      throw err;
    }
    return new EtcdClient(options, routes, failures);
  }

  /** `routes`: the forwarder of each endpoint, in order, and where they record failed tunnels, from `open`. */
  constructor(options: EtcdClientOptions, routes: readonly Route[] = [], dialFailures = new Map<string, DialFailure>()) {
    if (options.endpoints.length === 0) throw new PlatformError("INVALID_OPTION", "expected at least one etcd endpoint");
    this.#routes = routes;
    this.#dialFailures = dialFailures;
    const services = etcdServices();
    const lease = (etcdServices("string")["Lease"] as unknown as { service: Pick<KvMethods, "LeaseGrant"> }).service;
    this.#methods = { ...(services["KV"] as unknown as { service: KvMethods }).service, LeaseGrant: lease.LeaseGrant };
    const Watch = services["Watch"] as unknown as new (target: string, creds: ChannelCredentials, options?: object) => WatchClient;
    this.#timeoutMs = options.callTimeoutMs ?? 10_000;
    this.#members = options.endpoints.map((url, i) => {
      const { target, host, port, tls } = parseEndpoint(url);
      const route = routes[i];
      const creds = tls ? credentials.createSsl(options.tls?.ca ?? null, options.tls?.key ?? null, options.tls?.cert ?? null) : credentials.createInsecure();
      // The watches' channel: keepalives notice a member that vanished without a FIN.
      // Reconnects start after 100 ms and back off to 2 s (grpc's defaults, 1 s to 120 s, outlast a member restart).
      const base = { "grpc.initial_reconnect_backoff_ms": 100, "grpc.max_reconnect_backoff_ms": 2000, "grpc.keepalive_time_ms": 10_000, "grpc.keepalive_timeout_ms": 5_000, "grpc.keepalive_permit_without_calls": 1, "grpc.max_receive_message_length": 64 << 20 };
      // Through a forwarder the channel dials a loopback address, but TLS still checks the member's certificate for
      // the endpoint's own host name, and requests name the member as their authority.
      const channel = route ? { ...base, "grpc.ssl_target_name_override": host, "grpc.default_authority": target } : base;
      const watch = new Watch(route?.address ?? target, creds, channel);
      // Calls on a session of their own: grpc-js's call layers were ~40% of a write's CPU in this process
      // (docs/benchmarks.md, storage backends).
      const kv = new UnaryChannel({ url: `${tls ? "https" : "http"}://${target}`, host, port, tls, ...(route && { via: route.address }) }, options.tls);
      return { url, kv, watch };
    });
  }

  get endpoints(): readonly string[] {
    return this.#members.map((m) => m.url);
  }

  /**
   * One unary call. Reads go to the next member on any UNAVAILABLE; a write moves on only when it provably was not
   * sent, since a write that reached a member may have committed and must not be applied twice.
   */
  async call<T>(method: KvMethod, request: object, write: boolean): Promise<T> {
    // Every member is tried once; then, until the deadline, again every 200 ms (a member restarting, an election).
    const started = Date.now();
    const deadline = started + this.#timeoutMs;
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new PlatformError("STORAGE_UNAVAILABLE", "storage is closed");
      const index = this.#current;
      const member = this.#members[index]!;
      const def = this.#methods[method];
      try {
        const answer = await member.kv.call(def.path, def.requestSerialize(request), Math.max(deadline, Date.now() + 1000));
        return def.responseDeserialize(answer) as T;
      } catch (err) {
        const e = err as GrpcCallError;
        if (typeof e?.code !== "number") throw err;
        // A member that is gone or hangs is skipped by later calls too; only a safe call is sent again now.
        if ((e.code === GRPC.UNAVAILABLE || e.code === GRPC.DEADLINE_EXCEEDED) && this.#current === index) this.#current = (index + 1) % this.#members.length;
        const retry = e.code === GRPC.UNAVAILABLE && (!write || e.notSent);
        if (!retry || Date.now() + 200 >= deadline) throw this.#withDialFailure(e, member.url, started);
        if (attempt >= this.#members.length - 1) await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** A member behind the egress proxy that could not be tunnelled to during this call: the proxy's answer, appended. */
  #withDialFailure(e: GrpcCallError, url: string, since: number): GrpcCallError {
    const failure = this.#dialFailures.get(url);
    if (e.code === GRPC.UNAVAILABLE && failure && failure.at >= since) e.details = `${e.details}; ${failure.error.message}`;
    return e;
  }

  /**
   * A watch stream on the current member. `hasleader` makes the member end the stream when it loses its leader, so a
   * partitioned member cannot keep a watcher waiting for events that the rest of the cluster is committing.
   */
  openWatch(): { stream: ClientDuplexStream<unknown, EtcdWatchResponse>; url: string } {
    const member = this.#members[this.#current]!;
    const metadata = new Metadata();
    metadata.set("hasleader", "true");
    return { stream: member.watch.Watch(metadata), url: member.url };
  }

  /** A watch stream failed: later streams and calls try the next member first. */
  failedOver(url: string): void {
    if (this.#members[this.#current]!.url === url) this.#current = (this.#current + 1) % this.#members.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const m of this.#members) {
      m.kv.close();
      m.watch.close();
    }
    await Promise.all(this.#routes.map((r) => r.close()));
  }
}

/** `target` as grpc-js takes it (`host:port`); `host` without brackets and `port` (grpc-js's default, 443, when absent) for the proxy. */
function parseEndpoint(url: string): { target: string; host: string; port: number; tls: boolean } {
  const m = /^(https?):\/\/(\[[^\]/]+\]|[^/:]+)(?::(\d{1,5}))?\/?$/.exec(url);
  if (!m) throw new PlatformError("INVALID_OPTION", `expected an etcd endpoint like https://host:2379, got ${JSON.stringify(url)}`);
  const port = m[3] === undefined ? 443 : Number(m[3]);
  return { target: m[3] === undefined ? m[2]! : `${m[2]}:${m[3]}`, host: m[2]!.replace(/^\[(.*)\]$/, "$1"), port, tls: m[1] === "https" };
}

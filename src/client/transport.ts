// HTTP(S) transport: one keep-alive agent per (server, TLS identity), fixed headers, gzip decoding, proxy tunnel.
import { createHash } from "node:crypto";
import http, { type IncomingHttpHeaders } from "node:http";
import https from "node:https";
import { createSecureContext, type SecureContext } from "node:tls";
import { pipeline, Readable } from "node:stream";
import { createGunzip, gunzipSync } from "node:zlib";
import { abortReason } from "../time/clock.js";
import { connectionError, type CallContext } from "./status-errors.js";
import { tunnelAgent } from "./proxy-tunnel.js";
import { SocketTransport, type SocketRequest } from "./socket-transport.js";
import { ChannelTransport } from "./channel-transport.js";
import type { Http1Response } from "./http1-response.js";
import type { MessagePort } from "node:worker_threads";
import { defaultTracer } from "../tracing/tracer.js";
import type { Impersonation, RestConfig } from "./rest-config.js";

export interface ClientIdentity {
  readonly cert: string;
  readonly key: string;
}

export interface TransportRequest {
  readonly method: string;
  /** Path below the server's base path, with its query string. */
  readonly path: string;
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: Buffer;
  readonly signal?: AbortSignal;
  /** A certificate from an exec plugin, in place of the configured one. */
  readonly identity?: ClientIdentity;
  /** The body is read as it arrives (a watch), not whole. */
  readonly stream?: boolean;
}

export interface TransportResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body, already gunzipped. */
  readonly body: Readable;
  /** The whole body, when the transport read it already (the socket client): no stream to read. */
  readonly bytes?: Buffer;
  /** The whole body as text, when the transport was handed text (the in-thread channel): no bytes to decode. */
  readonly text?: string;
}

const MAX_SOCKETS = 256;
// Idle connections kept per agent. A burst opens many; closing all but a few made the next burst pay TLS
// handshakes again (measured: ~4% of a controller's CPU in bench:e2e).
const MAX_FREE_SOCKETS = 128;

/** Agents shared by every client of the process with the same server and TLS identity, counted by use. */
export class AgentPool {
  readonly #agents = new Map<string, { agent: http.Agent; refs: number }>();

  acquire(config: RestConfig, identity: ClientIdentity | undefined): { key: string; agent: http.Agent } {
    const tls = { ...config.tls, ...(identity ?? {}) };
    const key = createHash("sha256")
      .update(JSON.stringify([config.server, tls.ca, tls.cert, tls.key, tls.insecureSkipVerify === true, tls.serverName, config.proxyUrl, config.socketPath]))
      .digest("hex");
    let entry = this.#agents.get(key);
    if (!entry) {
      const secure = config.server.startsWith("https:");
      const options: https.AgentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_FREE_SOCKETS };
      if (secure) {
        // One secure context for every connection of the agent: otherwise each new connection parses the CA,
        // certificate and key again. The PEM texts themselves stay out of the agent's options when the context
        // loaded: https.Agent names its connection pool by concatenating them (kilobytes) on every request, three
        // times per request; this agent serves one identity anyway. If they do not load, they are passed so that
        // the connection reports why.
        const context = sharedSecureContext(tls);
        Object.assign(options, {
          ...(context.secureContext ? context : { ca: tls.ca, cert: tls.cert, key: tls.key }),
          rejectUnauthorized: tls.insecureSkipVerify !== true,
          ...(tls.serverName ? { servername: tls.serverName } : {}),
        });
      }
      const agent = config.proxyUrl && secure ? tunnelAgent(options, new URL(config.proxyUrl)) : secure ? new https.Agent(options) : new http.Agent(options);
      entry = { agent, refs: 0 };
      this.#agents.set(key, entry);
    }
    entry.refs++;
    return { key, agent: entry.agent };
  }

  release(key: string): void {
    const entry = this.#agents.get(key);
    if (!entry || --entry.refs > 0) return;
    entry.agent.destroy();
    this.#agents.delete(key);
  }

  get size(): number {
    return this.#agents.size;
  }
}

export const sharedAgents = new AgentPool();

/** A prebuilt secure context, or nothing when the material does not load (the connection then reports why). */
function sharedSecureContext(tls: { ca?: string | undefined; cert?: string | undefined; key?: string | undefined }): { secureContext?: SecureContext } {
  try {
    return { secureContext: createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key }) };
  } catch {
    return {};
  }
}

/** client-go's escaping of Impersonate-Extra-<key>: header-token characters stay, the rest (and %) are %XX. */
export function extraHeaderName(key: string): string {
  const escaped = [...Buffer.from(key, "utf8")]
    .map((b) => (/[A-Za-z0-9!#$&'*+\-.^_`|~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
  return `Impersonate-Extra-${escaped}`;
}

export function impersonationHeaders(imp: Impersonation | undefined): Record<string, string | string[]> {
  if (!imp?.user) return {};
  const h: Record<string, string | string[]> = { "Impersonate-User": imp.user };
  if (imp.groups && imp.groups.length > 0) h["Impersonate-Group"] = [...imp.groups];
  if (imp.uid) h["Impersonate-Uid"] = imp.uid;
  for (const [k, values] of Object.entries(imp.extra ?? {})) if (values.length > 0) h[extraHeaderName(k)] = [...values];
  return h;
}

/** What takes a whole-body request without node's HTTP client: the socket client, or the in-thread channel. */
interface LeanClient {
  request(req: SocketRequest): Promise<Http1Response>;
  close(): void;
}

/**
 * One client per channel, shared by every transport of its RestConfig (the port is one object). A transport's close
 * leaves it open: the channel ends with its thread, or when the server closes it.
 */
const channelClients = new WeakMap<MessagePort, ChannelTransport>();
function channelClient(port: MessagePort): ChannelTransport {
  let client = channelClients.get(port);
  if (!client) channelClients.set(port, (client = new ChannelTransport(port)));
  return client;
}

/** Sends requests for one RestConfig; resolves when the response headers arrive. */
export class Transport {
  readonly #config: RestConfig;
  readonly #pool: AgentPool;
  readonly #base: URL;
  readonly #fixed: Record<string, string | string[]>;
  /** Asked for on node's client only: the lean socket client's bytes stay on this machine. */
  readonly #compression: Record<string, string>;
  readonly #held = new Set<string>();
  #identityKey: string | undefined;
  #configured: http.Agent | undefined;
  /** Whole-body requests over a unix-domain socket (plain HTTP) or the in-thread channel go through a lean client. */
  readonly #lean: LeanClient | undefined;
  /** The in-thread channel, which also carries streamed answers (watches). */
  readonly #channel: ChannelTransport | undefined;

  constructor(config: RestConfig, pool: AgentPool = sharedAgents) {
    this.#config = config;
    this.#pool = pool;
    this.#base = new URL(config.server);
    this.#fixed = {
      "User-Agent": config.userAgent,
      Accept: config.accept ?? "application/json",
      ...impersonationHeaders(config.impersonate),
    };
    this.#compression = config.disableCompression ? {} : { "Accept-Encoding": "gzip" };
    const plainLocal = this.#base.protocol === "http:" && config.proxyUrl === undefined;
    if (config.channel !== undefined && plainLocal) {
      const channel = (this.#channel = channelClient(config.channel));
      // The channel lives as long as its port: a transport's close leaves it to the other transports on it.
      this.#lean = { request: (req) => channel.request(req), close: () => undefined };
    } else if (config.socketPath !== undefined && plainLocal) this.#lean = new SocketTransport(config.socketPath, MAX_SOCKETS);
  }

  get server(): string {
    return this.#config.server;
  }

  #agent(identity: ClientIdentity | undefined): http.Agent {
    // The configured identity's agent is looked up once; plugin identities may change, so they are looked up each time.
    if (identity === undefined && this.#configured !== undefined) return this.#configured;
    const { key, agent } = this.#pool.acquire(this.#config, identity);
    // One reference per distinct agent this transport uses; extra acquisitions are returned at once.
    if (this.#held.has(key)) {
      this.#pool.release(key);
    } else {
      this.#held.add(key);
      // A rotated plugin certificate retires the previous one's agent and its connections, as client-go does.
      if (identity && this.#identityKey !== undefined) {
        this.#held.delete(this.#identityKey);
        this.#pool.release(this.#identityKey);
      }
    }
    if (identity) this.#identityKey = key;
    else this.#configured = agent;
    return agent;
  }

  send(req: TransportRequest): Promise<TransportResponse> {
    const ctx: CallContext = { method: req.method, path: req.path };
    const secure = this.#base.protocol === "https:";
    const proxied = !secure && this.#config.proxyUrl !== undefined;
    const target = `${this.#base.pathname.replace(/\/$/, "")}${req.path}`;
    const proxy = proxied ? new URL(this.#config.proxyUrl!) : undefined;
    const lean = this.#lean !== undefined && (req.stream !== true || this.#channel !== undefined);
    const headers: Record<string, string | string[]> = { ...this.#fixed, ...(!lean && this.#compression), ...(req.headers as Record<string, string | string[]>) };
    // The lean client writes the body's length itself.
    if (req.body && !lean) headers["Content-Length"] = String(req.body.length);
    // Inside a traced sync, the server continues the trace (when it trusts this client, as it trusts system:masters).
    const traceparent = defaultTracer().current()?.traceparent();
    if (traceparent) headers.traceparent = traceparent;
    if (proxied) headers.Host = this.#base.host;
    if (lean && req.stream === true) return this.#openChannel(this.#channel!, req, target, headers, ctx);
    if (lean) return this.#sendLean(this.#lean!, req, target, headers, ctx);
    const options: http.RequestOptions = {
      method: req.method,
      host: proxy ? proxy.hostname : this.#base.hostname.replace(/^\[|\]$/g, ""),
      port: proxy ? proxy.port || 80 : this.#base.port || (secure ? 443 : 80),
      // A plain-HTTP request through a proxy names the whole URL.
      path: proxied ? `${this.#base.origin}${target}` : target,
      headers,
      agent: this.#agent(req.identity),
      ...(this.#config.socketPath !== undefined && !secure && { socketPath: this.#config.socketPath }),
    };
    return new Promise((resolve, reject) => {
      if (req.signal?.aborted) return reject(abortReason(req.signal));
      const request = (secure ? https : http).request(options);
      const onAbort = () => request.destroy(abortReason(req.signal!) as Error);
      req.signal?.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => req.signal?.removeEventListener("abort", onAbort);
      request.once("error", (err) => {
        cleanup();
        reject(req.signal?.aborted ? abortReason(req.signal) : connectionError(err, this.#config.server, ctx));
      });
      request.once("response", (res) => {
        // The listener stays until the body is done, so an abort also ends a streaming body.
        res.once("close", cleanup);
        const gzip = String(res.headers["content-encoding"] ?? "").toLowerCase() === "gzip";
        const body = gzip ? pipeline(res, createGunzip(), () => undefined) : res;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
      request.end(req.body);
    });
  }

  /**
   * The lean client's exchange: no compression asked for (the bytes stay on this machine), the whole body read, the
   * same errors as node's client (connectionError of the socket's code).
   */
  async #sendLean(client: LeanClient, req: TransportRequest, target: string, headers: Record<string, string | string[]>, ctx: CallContext): Promise<TransportResponse> {
    let res;
    try {
      res = await client.request({ method: req.method, path: target, headers, body: req.body, signal: req.signal });
    } catch (err) {
      if (req.signal?.aborted) throw abortReason(req.signal);
      throw connectionError(err, this.#config.server, ctx);
    }
    const gzip = String(res.headers["content-encoding"] ?? "").toLowerCase() === "gzip";
    if (res.text !== undefined && !gzip) {
      const text = res.text;
      return {
        status: res.status,
        headers: res.headers,
        text,
        get bytes() {
          return Buffer.from(text, "utf8");
        },
        get body() {
          return Readable.from([Buffer.from(text, "utf8")]);
        },
      };
    }
    const bytes = gzip ? gunzipSync(res.body) : res.body;
    return {
      status: res.status,
      headers: res.headers,
      bytes,
      get body() {
        return Readable.from([bytes]);
      },
    };
  }

  /** A streamed exchange over the in-thread channel: the head when the server begins, the body as it writes. */
  async #openChannel(channel: ChannelTransport, req: TransportRequest, target: string, headers: Record<string, string | string[]>, ctx: CallContext): Promise<TransportResponse> {
    try {
      const res = await channel.open({ method: req.method, path: target, headers, body: req.body, signal: req.signal });
      return { status: res.status, headers: res.headers, body: res.body };
    } catch (err) {
      if (req.signal?.aborted) throw abortReason(req.signal);
      throw connectionError(err, this.#config.server, ctx);
    }
  }

  /** Returns this transport's agents to the pool; the last user of an agent closes its sockets. */
  close(): void {
    this.#lean?.close();
    for (const key of this.#held) this.#pool.release(key);
    this.#held.clear();
    this.#configured = undefined;
    this.#identityKey = undefined;
  }
}

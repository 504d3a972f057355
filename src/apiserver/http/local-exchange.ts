// One request of the in-thread channel (bootstrap/local-channel.ts) as the objects node's HTTP server hands to its
// request listeners: what fastify and this server's hooks read of an IncomingMessage and a ServerResponse, without a
// socket, an HTTP parser or streams. The response's head and body are collected and handed back whole, unless the
// handler flushes its head first (a watch): then the head goes at once and each write after it.
import { EventEmitter } from "node:events";
import type { IncomingHttpHeaders, OutgoingHttpHeader } from "node:http";
import type { ChannelRequest } from "../../client/channel-transport.js";
import { addHeader } from "../../client/http1-response.js";

/**
 * The socket the server's code may look at: no TLS (so no peer certificate), no address (as a unix-domain socket's
 * peer), no events. One per request (made from this prototype): fastify may note things on a request's socket.
 */
const SOCKET_PROTO = {
  encrypted: false,
  remoteAddress: undefined,
  remotePort: undefined,
  on(): unknown {
    return this;
  },
  once(): unknown {
    return this;
  },
  off(): unknown {
    return this;
  },
  removeListener(): unknown {
    return this;
  },
  setTimeout(): unknown {
    return this;
  },
};

/** The IncomingMessage of a channel request: headers as node parses them, the body emitted once it is read. */
export class LocalRequest extends EventEmitter {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  readonly rawHeaders: string[] = [];
  readonly httpVersion = "1.1";
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  readonly socket: typeof SOCKET_PROTO = Object.create(SOCKET_PROTO) as typeof SOCKET_PROTO;
  complete = true;
  aborted = false;
  readonly #body: Uint8Array | undefined;
  #flowing = false;
  #distinct: Record<string, string[]> | undefined;

  constructor(m: ChannelRequest) {
    super();
    this.method = m.method;
    this.url = m.path;
    this.#body = m.body;
    for (const name in m.headers) {
      const value = m.headers[name]!;
      for (const v of typeof value === "string" ? [value] : value) this.#add(name, v);
    }
    this.#add("Host", "localhost");
    if (m.body !== undefined && this.headers["content-length"] === undefined) this.#add("Content-Length", String(m.body.byteLength));
  }

  #add(name: string, value: string): void {
    this.rawHeaders.push(name, value);
    addHeader(this.headers, name.toLowerCase(), value);
  }

  /** Every value of each header, as node's `headersDistinct` (read when a request impersonates). */
  get headersDistinct(): Record<string, string[]> {
    if (this.#distinct) return this.#distinct;
    const out: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
    for (let i = 0; i < this.rawHeaders.length; i += 2) (out[this.rawHeaders[i]!.toLowerCase()] ??= []).push(this.rawHeaders[i + 1]!);
    return (this.#distinct = out);
  }

  /** A `data` listener starts the flow, as on node's IncomingMessage (a reader that never calls resume()). */
  override on(event: string | symbol, listener: Parameters<EventEmitter["on"]>[1]): this {
    super.on(event, listener);
    if (event === "data") this.resume();
    return this;
  }

  override addListener(event: string | symbol, listener: Parameters<EventEmitter["on"]>[1]): this {
    return this.on(event, listener);
  }

  /** A reader (fastify's body parser) starts the flow: the body in one piece, then the end, as a stream would. */
  resume(): this {
    if (this.#flowing) return this;
    this.#flowing = true;
    process.nextTick(() => {
      const body = this.#body;
      if (body !== undefined && body.byteLength > 0) this.emit("data", Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      this.emit("end");
    });
    return this;
  }

  pause(): this {
    return this;
  }

  setEncoding(): this {
    return this;
  }

  /** The client went away: listeners of "close" (a watch's end, a deadline, fastify's abort) run as on a socket's close. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.complete = false;
    this.emit("aborted");
    this.emit("close");
  }
}

/** Where a streamed answer goes: its head when flushed, each chunk as written, then its end. */
export interface LocalStreamSink {
  head(status: number, headers: IncomingHttpHeaders): void;
  chunk(chunk: Uint8Array | string): void;
  end(): void;
}

/**
 * The ServerResponse of a channel request: headers set, then one body (end), handed to `deliver`; or, once the handler
 * calls flushHeaders() (a watch), the head and every write handed to `stream` as they come.
 */
export class LocalResponse extends EventEmitter {
  statusCode = 200;
  statusMessage = "";
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  /** Whether the answer was handed over; a response destroyed before that ends as a reset connection would. */
  answered = false;
  sendDate = false;
  /** By lower-case name: what node's response keeps of a header (its name as written is not sent anywhere here). */
  readonly #headers = new Map<string, OutgoingHttpHeader>();
  readonly #chunks: (Buffer | string)[] = [];
  readonly #method: string;
  readonly #deliver: (status: number, headers: IncomingHttpHeaders, body: Uint8Array | string) => void;
  readonly #stream: LocalStreamSink | undefined;
  #streaming = false;

  constructor(method: string, deliver: (status: number, headers: IncomingHttpHeaders, body: Uint8Array | string) => void, stream?: LocalStreamSink) {
    super();
    this.#method = method;
    this.#deliver = deliver;
    this.#stream = stream;
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    if (this.headersSent) throw Object.assign(new Error("Cannot set headers after they are sent to the client"), { code: "ERR_HTTP_HEADERS_SENT" });
    this.#headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    return this.#headers.get(name.toLowerCase());
  }

  hasHeader(name: string): boolean {
    return this.#headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.#headers.delete(name.toLowerCase());
  }

  getHeaders(): Record<string, OutgoingHttpHeader> {
    const out: Record<string, OutgoingHttpHeader> = Object.create(null) as Record<string, OutgoingHttpHeader>;
    for (const [key, value] of this.#headers) out[key] = value;
    return out;
  }

  getHeaderNames(): string[] {
    return [...this.#headers.keys()];
  }

  writeHead(status: number, reason?: string | Record<string, OutgoingHttpHeader | undefined>, more?: Record<string, OutgoingHttpHeader | undefined>): this {
    if (this.headersSent) throw Object.assign(new Error("Cannot write headers after they are sent to the client"), { code: "ERR_HTTP_HEADERS_SENT" });
    const headers = typeof reason === "object" ? reason : more;
    if (typeof reason === "string") this.statusMessage = reason;
    this.statusCode = status;
    if (headers) for (const name in headers) if (headers[name] !== undefined) this.setHeader(name, headers[name]);
    this.headersSent = true;
    return this;
  }

  /**
   * Sends the head now, as node's response does: the answer streams from here (each write handed over as it comes).
   * Without a stream sink the answer stays whole.
   */
  flushHeaders(): void {
    this.headersSent = true;
    if (this.#streaming || this.destroyed || this.writableEnded || this.#stream === undefined) return;
    this.#streaming = true;
    this.#stream.head(this.statusCode, this.#answerHeaders());
    const body = this.#body();
    this.#chunks.length = 0;
    if (body.length > 0) this.#stream.chunk(body);
  }

  write(chunk: Buffer | string | Uint8Array): boolean {
    this.headersSent = true;
    if (this.destroyed) return true;
    if (this.#streaming) this.#stream!.chunk(chunk);
    else this.#chunks.push(typeof chunk === "string" || Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    return true;
  }

  end(chunk?: Buffer | string | Uint8Array | null): this {
    if (this.writableEnded) return this;
    if (chunk !== undefined && chunk !== null) this.write(chunk);
    this.headersSent = true;
    this.writableEnded = true;
    if (!this.destroyed) {
      this.answered = true;
      if (this.#streaming) this.#stream!.end();
      else this.#deliver(this.statusCode, this.#answerHeaders(), this.#body());
    }
    this.writableFinished = true;
    this.emit("finish");
    this.#close();
    return this;
  }

  /** Ends the exchange without an answer (the server gave up on it, or the client left). */
  destroy(err?: Error): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    // As a socket's error, it reaches whoever listens; nobody listening is not a crash here.
    if (err && this.listenerCount("error") > 0) this.emit("error", err);
    this.#close();
    return this;
  }

  #close(): void {
    if (this.listenerCount("close") > 0) this.emit("close");
    this.removeAllListeners();
  }

  /** No body for HEAD, 204 and 304, as node's response; one piece stays as it is (a string is not encoded here). */
  #body(): Uint8Array | string {
    if (this.#method === "HEAD" || this.statusCode === 204 || this.statusCode === 304 || this.#chunks.length === 0) return "";
    if (this.#chunks.length === 1) return this.#chunks[0]!;
    return Buffer.concat(this.#chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)));
  }

  /** What the client's IncomingMessage would hold: lower-case names, lists joined (set-cookie a list), numbers as text. */
  #answerHeaders(): IncomingHttpHeaders {
    const out: IncomingHttpHeaders = {};
    for (const [key, value] of this.#headers) for (const v of Array.isArray(value) ? value : [value]) addHeader(out, key, String(v));
    return out;
  }
}

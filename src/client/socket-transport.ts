// Requests over a unix-domain socket on a lean HTTP/1.1 client: one write per request, one reader per response, kept
// connections. It carries the co-located controllers of `up` (docs/architecture.md), whose every request is a small
// JSON exchange: node's http client (ClientRequest, IncomingMessage and their streams) was ~35 µs of CPU per request.
import { connect, type Socket } from "node:net";
import { abortReason } from "../time/clock.js";
import { HEADER_NAME, ResponseReader, type Http1Response } from "./http1-response.js";

export interface SocketRequest {
  readonly method: string;
  /** The request target: path and query, as sent. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: Buffer;
  readonly signal?: AbortSignal;
}

/** A request node's client would refuse to send: a target or header that would break the message framing. */
export class InvalidRequest extends Error {
  readonly code = "ERR_INVALID_CHAR";
}

// Node's own checks: a request target of visible latin-1 characters, header values without control characters.
const UNSAFE_TARGET = /[^\u0021-\u00ff]/;
const UNSAFE_VALUE = /[^\t\u0020-\u007e\u0080-\u00ff]/;

/**
 * Checks what node's client checks before sending (a request target of visible characters, header names that are
 * tokens, values without control characters) and calls `each` for every header value but Content-Length, which the
 * senders here write themselves from the body.
 */
export function requestHeaders(req: SocketRequest, each: (name: string, value: string) => void): void {
  if (UNSAFE_TARGET.test(req.path)) throw new InvalidRequest(`the request path contains unescaped characters: ${JSON.stringify(req.path.slice(0, 80))}`);
  for (const [name, value] of Object.entries(req.headers)) {
    if (!HEADER_NAME.test(name)) throw new InvalidRequest(`invalid header name ${JSON.stringify(name)}`);
    // A second Content-Length would make the server refuse the request.
    if (name.length === 14 && name.toLowerCase() === "content-length") continue;
    for (const v of typeof value === "string" ? [value] : value) {
      if (UNSAFE_VALUE.test(v)) throw new InvalidRequest(`invalid character in header ${name}`);
      each(name, v);
    }
  }
}

/** The request's bytes: the head built as one string, the body appended (one write). */
function encode(req: SocketRequest): Buffer {
  let head = `${req.method} ${req.path} HTTP/1.1\r\nHost: localhost\r\n`;
  requestHeaders(req, (name, v) => (head += `${name}: ${v}\r\n`));
  const body = req.body ?? EMPTY;
  // Every request says its length, so a body never depends on the connection closing.
  head += `Content-Length: ${body.length}\r\n\r\n`;
  const bytes = Buffer.allocUnsafe(Buffer.byteLength(head, "latin1") + body.length);
  const at = bytes.write(head, "latin1");
  body.copy(bytes, at);
  return bytes;
}

const EMPTY = Buffer.alloc(0);

interface Exchange {
  readonly reader: ResponseReader;
  readonly resolve: (response: Http1Response) => void;
  readonly reject: (err: Error) => void;
}

/** A kept connection and the exchange it carries, if any. */
class Connection {
  readonly socket: Socket;
  exchange: Exchange | undefined;

  constructor(path: string, onIdleEnd: (c: Connection) => void) {
    this.socket = connect(path);
    this.socket.on("data", (data: Buffer) => this.#data(data));
    const ended = (err?: Error) => {
      const exchange = this.exchange;
      this.exchange = undefined;
      if (exchange) {
        const response = err ? undefined : exchange.reader.end();
        if (response) exchange.resolve(response);
        else exchange.reject(err ?? Object.assign(new Error("the connection closed before the response ended"), { code: "ECONNRESET" }));
      }
      onIdleEnd(this);
    };
    this.socket.once("error", ended);
    this.socket.once("close", () => ended());
  }

  #data(data: Buffer): void {
    const exchange = this.exchange;
    if (!exchange) {
      // Bytes nobody asked for: the connection is out of step.
      this.socket.destroy();
      return;
    }
    let done: ReturnType<ResponseReader["push"]>;
    try {
      done = exchange.reader.push(data);
    } catch (err) {
      this.exchange = undefined;
      exchange.reject(err as Error);
      this.socket.destroy();
      return;
    }
    if (!done) return;
    this.exchange = undefined;
    if (done.rest.length > 0 || !done.response.keepAlive) this.socket.destroy();
    exchange.resolve(done.response);
  }
}

/** Kept connections to one unix-domain socket, at most `maxSockets` at once (more requests wait for one). */
export class SocketTransport {
  readonly #path: string;
  readonly #maxSockets: number;
  readonly #idle: Connection[] = [];
  readonly #busy = new Set<Connection>();
  readonly #waiting: Array<() => void> = [];
  /** Requests holding one of the maxSockets places. */
  #active = 0;
  #closed = false;

  constructor(path: string, maxSockets = 256) {
    this.#path = path;
    this.#maxSockets = maxSockets;
  }

  /** Sends `req` and resolves with the whole response; rejects with the socket's error (its `code` kept) or the abort reason. */
  async request(req: SocketRequest): Promise<Http1Response> {
    const bytes = encode(req);
    if (req.signal?.aborted) throw abortReason(req.signal);
    await this.#slot(req.signal);
    if (req.signal?.aborted) {
      this.#handOver();
      throw abortReason(req.signal);
    }
    const connection = this.#idle.pop() ?? new Connection(this.#path, (c) => this.#ended(c));
    this.#busy.add(connection);
    const onAbort = () => connection.socket.destroy(abortReason(req.signal!) as Error);
    req.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await new Promise<Http1Response>((resolve, reject) => {
        connection.exchange = { reader: new ResponseReader(req.method), resolve, reject };
        connection.socket.write(bytes);
      });
    } catch (err) {
      if (req.signal?.aborted) throw abortReason(req.signal);
      throw err;
    } finally {
      req.signal?.removeEventListener("abort", onAbort);
      this.#release(connection);
    }
  }

  /** Closes every connection; requests in flight fail. */
  close(): void {
    this.#closed = true;
    for (const c of [...this.#idle, ...this.#busy]) c.socket.destroy();
    this.#idle.length = 0;
  }

  /** A place among the maxSockets requests in flight; taken at once when one is free (counted before any await). */
  #slot(signal: AbortSignal | undefined): Promise<void> {
    if (this.#active < this.#maxSockets) {
      this.#active++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(go);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(go);
    });
  }

  /** The request is over: its connection kept (unless closed) and its place handed to a waiting request, if any. */
  #release(connection: Connection): void {
    this.#busy.delete(connection);
    if (!connection.socket.destroyed && !this.#closed) this.#idle.push(connection);
    this.#handOver();
  }

  #handOver(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#active--;
  }

  #ended(connection: Connection): void {
    const at = this.#idle.indexOf(connection);
    if (at >= 0) this.#idle.splice(at, 1);
  }
}

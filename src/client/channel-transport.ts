// Requests over a MessagePort to a server in the same process (the in-thread channel of `platform-ca up`,
// apiserver/bootstrap/local-channel.ts): objects handed over, no socket and no HTTP on either side. Whole answers read
// as the socket client's (Http1Response); a streamed one (a watch) as a readable body of the chunks the server wrote.
// Errors as a socket's.
import type { IncomingHttpHeaders } from "node:http";
import { Readable } from "node:stream";
import type { MessagePort } from "node:worker_threads";
import { abortReason } from "../time/clock.js";
import type { Http1Response } from "./http1-response.js";
import { requestHeaders, type SocketRequest } from "./socket-transport.js";

/** A request as the channel carries it: header names as the client wrote them, the body whole. */
export interface ChannelRequest {
  readonly id: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  readonly body?: Uint8Array;
}

/** What the client's side posts: a request, or the end of one it no longer waits for. */
export type ChannelMessage = ChannelRequest | { readonly id: number; readonly abort: true };

/** The answer: header names in lower case, repeated ones joined as node's IncomingMessage joins them. */
export interface ChannelResponse {
  readonly id: number;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array | string;
}

/** The head of an answer that streams (a watch: the server flushed its head before the body): chunks, then its end. */
export interface ChannelHead {
  readonly id: number;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly stream: true;
}

/**
 * What the server's side posts: a whole answer; a streamed one's head, chunks and end; or the end of an exchange it
 * gave up without an answer (a reset connection).
 */
export type ChannelAnswer =
  | ChannelResponse
  | ChannelHead
  | { readonly id: number; readonly chunk: Uint8Array | string }
  | { readonly id: number; readonly end: true }
  | { readonly id: number; readonly reset: true };

/** A streamed answer as the client reads it: the head, and the body as the server writes it (text as text). */
export interface ChannelStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Readable;
}

interface Pending {
  /** request(): the whole answer. */
  readonly resolve?: (response: Http1Response) => void;
  /** open(): the answer's head, whole or streamed. */
  readonly opened?: (response: ChannelStream) => void;
  /** An error of the exchange, or the caller's abort reason (whatever it aborted with). */
  readonly reject: (err: unknown) => void;
  /** A streamed answer under way: where its chunks go (open()), or the chunks gathered until its end (request()). */
  body?: Readable;
  gathered?: { readonly status: number; readonly headers: IncomingHttpHeaders; readonly chunks: (Uint8Array | string)[] };
}

/**
 * Bytes for postMessage, by either end: a copy of their own size, transferred (cloning a view copies all the memory
 * behind it, a pooled Buffer's 8 KiB slab say), so the sender's buffer stays its own. `Uint8Array`'s slice copies;
 * a Buffer's is a view.
 */
export function transferable(bytes: Uint8Array): { readonly bytes: Uint8Array; readonly transfer: ArrayBuffer[] } {
  const own = Uint8Array.prototype.slice.call(bytes);
  return { bytes: own, transfer: [own.buffer as ArrayBuffer] };
}

/**
 * Messages a batch holds before it is posted without waiting for the turn's end. In a burst through `up`, 8, 16 and 32
 * gave the same times, and unbounded batches ~17% more (docs/benchmarks.md).
 */
export const CHANNEL_MAX_BATCH = 16;

/**
 * What either end posts in one turn of the event loop, posted together at the turn's end (setImmediate): one
 * postMessage, one wake-up of the other thread and one message event for all of them, so a burst's requests and
 * answers share the channel's per-message cost (a lone message waits for nothing but the current turn). A batch that
 * reaches CHANNEL_MAX_BATCH messages is posted at once, so the other thread starts on it while this one goes on:
 * without that, a turn that answers a whole group commit's writes (or starts as many) hands everything over at its
 * end, the other thread works while this one waits, and the two take turns instead of working together (a burst's
 * tail of Events ran so at one thread's speed). Either end takes a single message too. A batch that cannot be posted
 * goes to `undeliverable`, message by message.
 */
export class ChannelOutbox<M> {
  readonly #port: MessagePort;
  readonly #undeliverable: (message: M, err: Error) => void;
  #messages: M[] = [];
  #transfer: ArrayBuffer[] = [];
  #scheduled = false;
  #posted = 0;

  constructor(port: MessagePort, undeliverable: (message: M, err: Error) => void) {
    this.#port = port;
    this.#undeliverable = undeliverable;
  }

  post(message: M, transfer: readonly ArrayBuffer[] = []): void {
    this.#messages.push(message);
    for (const t of transfer) this.#transfer.push(t);
    if (this.#messages.length >= CHANNEL_MAX_BATCH) return this.#postBatch();
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#postBatch();
    });
  }

  /**
   * Counts the batches posted: a message handed to post() while this count stays the same has not crossed yet, so its
   * sender may still add to it (a watch's writes of one turn as one chunk).
   */
  get posted(): number {
    return this.#posted;
  }

  #postBatch(): void {
    if (this.#messages.length === 0) return;
    this.#posted++;
    const messages = this.#messages;
    const transfer = this.#transfer;
    this.#messages = [];
    this.#transfer = [];
    try {
      this.#port.postMessage(messages, transfer);
    } catch (err) {
      for (const m of messages) this.#undeliverable(m, err instanceof Error ? err : new Error(String(err)));
    }
  }
}

/** The messages of what the other end posted: a batch (ChannelOutbox) or one message alone. */
export function channelMessages(posted: unknown): readonly unknown[] {
  return Array.isArray(posted) ? posted : [posted];
}

/** An exchange that failed: a body under way ends with the error (its reader hears it), else the caller's promise. */
function failed(pending: Pending, err: unknown): void {
  if (pending.body) pending.body.destroy(err as Error);
  else pending.reject(err);
}

/** Errors with the codes of a socket's, so callers report them as any connection error (connectionError). */
const channelError = (message: string, code: string): Error => Object.assign(new Error(message), { code });

/** One client end of a channel; `request` has the socket client's shape. */
export class ChannelTransport {
  readonly #port: MessagePort;
  readonly #outbox: ChannelOutbox<ChannelMessage>;
  readonly #pending = new Map<number, Pending>();
  #next = 1;
  #closed = false;

  constructor(port: MessagePort) {
    this.#port = port;
    // A request that could not be posted fails as one whose connection broke.
    this.#outbox = new ChannelOutbox<ChannelMessage>(port, (m, err) => {
      const pending = this.#pending.get(m.id);
      this.#settled(m.id);
      pending?.reject(channelError(`the request could not be handed to the server: ${err.message}`, "ECONNRESET"));
    });
    port.on("message", (posted: unknown) => {
      for (const m of channelMessages(posted) as ChannelAnswer[]) this.#answer(m);
    });
    port.once("close", () => {
      this.#closed = true;
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const p of pending) failed(p, channelError("the server's local channel closed before the response", "ECONNRESET"));
    });
    // Held only while an answer is awaited (see #settled): an idle channel does not keep its thread alive.
    port.unref();
  }

  #answer(m: ChannelAnswer): void {
    if (typeof m !== "object" || m === null) return;
    const pending = this.#pending.get(m.id);
    if (!pending) return; // abandoned (aborted) while the server answered
    if ("stream" in m) {
      if (pending.opened) pending.opened({ status: m.status, headers: m.headers, body: (pending.body = this.#body(m.id)) });
      else pending.gathered = { status: m.status, headers: m.headers, chunks: [] };
      return;
    }
    if ("chunk" in m) {
      if (pending.body) pending.body.push(m.chunk);
      else pending.gathered?.chunks.push(m.chunk);
      return;
    }
    this.#settled(m.id);
    if ("reset" in m) return failed(pending, channelError("the server ended the exchange without an answer", "ECONNRESET"));
    if ("end" in m) {
      if (pending.body) return void pending.body.push(null);
      const g = pending.gathered;
      if (g === undefined) return pending.reject(channelError("the server ended an answer it never began", "ECONNRESET"));
      const text = g.chunks.every((c) => typeof c === "string");
      return this.#whole(pending, g.status, g.headers, text ? g.chunks.join("") : Buffer.concat(g.chunks.map((c) => (typeof c === "string" ? Buffer.from(c, "utf8") : c))));
    }
    this.#whole(pending, m.status, m.headers, m.body);
  }

  #whole(pending: Pending, status: number, headers: IncomingHttpHeaders, body: Uint8Array | string): void {
    if (pending.opened) {
      // open() got a whole answer (an error before any event, say): a body of that one piece.
      const stream = this.#body(undefined);
      stream.push(body);
      stream.push(null);
      return pending.opened({ status, headers, body: stream });
    }
    if (typeof body === "string") {
      // Text stays text: the caller parses it (rest-client's readBody), and bytes are made only for one that asks.
      return pending.resolve!({ status, headers, text: body, get body() { return Buffer.from(body, "utf8"); }, keepAlive: true });
    }
    pending.resolve!({ status, headers, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength), keepAlive: true });
  }

  /**
   * A streamed answer's body: text chunks stay text (utf8 encoding), bytes are decoded. Destroyed by its reader before
   * its end (a watch stopped), it tells the server, which ends the exchange as for a dropped connection. As node's
   * IncomingMessage, it emits an error (an abort, a reset) only to a reader listening for one.
   */
  #body(id: number | undefined): Readable {
    const body: Readable = new Readable({
      encoding: "utf8",
      read: () => undefined,
      destroy: (err, done) => {
        if (id !== undefined && this.#pending.has(id)) {
          this.#settled(id);
          this.#outbox.post({ id, abort: true });
        }
        done(err !== null && body.listenerCount("error") > 0 ? err : null);
      },
    });
    return body;
  }

  /** Sends `req` and resolves with the whole response; rejects as the socket client does (an error's `code`, the abort reason). */
  request(req: SocketRequest): Promise<Http1Response> {
    return new Promise((resolve, reject) => this.#send(req, { resolve, reject }));
  }

  /**
   * Sends `req` and resolves with the head once the server begins its answer: the body then streams as the server
   * writes it (a watch). An abort (or destroying the body) ends the exchange on the server's side too.
   */
  open(req: SocketRequest): Promise<ChannelStream> {
    return new Promise((opened, reject) => this.#send(req, { opened, reject }));
  }

  #send(req: SocketRequest, answer: Pick<Pending, "resolve" | "opened" | "reject">): void {
    const headers: Record<string, string | string[]> = {};
    requestHeaders(req, (name, value) => {
      const before = headers[name];
      headers[name] = before === undefined ? value : [...(typeof before === "string" ? [before] : before), value];
    });
    const signal = req.signal;
    if (signal?.aborted) return answer.reject(abortReason(signal));
    if (this.#closed) return answer.reject(channelError("the server's local channel is closed", "ECONNREFUSED"));
    const id = this.#next++;
    // The caller's buffer stays its own: a retry sends it again.
    const body = req.body === undefined ? undefined : transferable(req.body);
    const onAbort = () => {
      const pending = this.#pending.get(id);
      if (!pending) return;
      // A body under way tells the server itself as it is destroyed (#body); a request not yet answered is ended here.
      if (!pending.body) {
        this.#settled(id);
        this.#outbox.post({ id, abort: true });
      }
      failed(pending, abortReason(signal!));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    const { resolve, opened, reject } = answer;
    this.#pending.set(id, {
      ...(resolve && { resolve: (r: Http1Response) => (done(), resolve(r)) }),
      ...(opened && { opened: (r: ChannelStream) => (r.body.once("close", done), opened(r)) }),
      reject: (e) => (done(), reject(e)),
    });
    if (this.#pending.size === 1) this.#port.ref();
    this.#outbox.post({ id, method: req.method, path: req.path, headers, ...(body !== undefined && { body: body.bytes }) }, body?.transfer);
  }

  #settled(id: number): void {
    if (this.#pending.delete(id) && this.#pending.size === 0) this.#port.unref();
  }

  /** Closes the channel; requests in flight fail. */
  close(): void {
    this.#port.close();
  }
}

// Requests over a MessagePort to a server in the same process (the in-thread channel of `platform-ca up`,
// apiserver/bootstrap/local-channel.ts): objects handed over, no socket and no HTTP on either side. Whole-body
// exchanges only; watches keep the socket. Answers read as the socket client's (Http1Response), errors alike.
import type { IncomingHttpHeaders } from "node:http";
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

/** What the server's side posts: an answer, or the end of an exchange it gave up without one (a reset connection). */
export type ChannelAnswer = ChannelResponse | { readonly id: number; readonly reset: true };

interface Pending {
  readonly resolve: (response: Http1Response) => void;
  readonly reject: (err: Error) => void;
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
 * What either end posts in one turn of the event loop, posted together at the turn's end (setImmediate): one
 * postMessage, one wake-up of the other thread and one message event for all of them, so a burst's requests and
 * answers share the channel's per-message cost (a lone message waits for nothing but the current turn). Either end
 * takes a single message too. A batch that cannot be posted goes to `undeliverable`, message by message.
 */
export class ChannelOutbox<M> {
  readonly #port: MessagePort;
  readonly #undeliverable: (message: M, err: Error) => void;
  #messages: M[] = [];
  #transfer: ArrayBuffer[] = [];
  #scheduled = false;

  constructor(port: MessagePort, undeliverable: (message: M, err: Error) => void) {
    this.#port = port;
    this.#undeliverable = undeliverable;
  }

  post(message: M, transfer: readonly ArrayBuffer[] = []): void {
    this.#messages.push(message);
    for (const t of transfer) this.#transfer.push(t);
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
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
      for (const p of pending) p.reject(channelError("the server's local channel closed before the response", "ECONNRESET"));
    });
    // Held only while an answer is awaited (see #settled): an idle channel does not keep its thread alive.
    port.unref();
  }

  #answer(m: ChannelAnswer): void {
    if (typeof m !== "object" || m === null) return;
    const pending = this.#pending.get(m.id);
    if (!pending) return; // abandoned (aborted) while the server answered
    this.#settled(m.id);
    if ("reset" in m) return pending.reject(channelError("the server ended the exchange without an answer", "ECONNRESET"));
    if (typeof m.body === "string") {
      // Text stays text: the caller parses it (rest-client's readBody), and bytes are made only for one that asks.
      const text = m.body;
      return pending.resolve({ status: m.status, headers: m.headers, text, get body() { return Buffer.from(text, "utf8"); }, keepAlive: true });
    }
    pending.resolve({ status: m.status, headers: m.headers, body: Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength), keepAlive: true });
  }

  /** Sends `req` and resolves with the whole response; rejects as the socket client does (an error's `code`, the abort reason). */
  request(req: SocketRequest): Promise<Http1Response> {
    const headers: Record<string, string | string[]> = {};
    requestHeaders(req, (name, value) => {
      const before = headers[name];
      headers[name] = before === undefined ? value : [...(typeof before === "string" ? [before] : before), value];
    });
    if (req.signal?.aborted) return Promise.reject(abortReason(req.signal));
    if (this.#closed) return Promise.reject(channelError("the server's local channel is closed", "ECONNREFUSED"));
    const id = this.#next++;
    // The caller's buffer stays its own: a retry sends it again.
    const body = req.body === undefined ? undefined : transferable(req.body);
    return new Promise<Http1Response>((resolve, reject) => {
      const signal = req.signal;
      const onAbort = () => {
        this.#settled(id);
        this.#outbox.post({ id, abort: true });
        reject(abortReason(signal!));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => signal?.removeEventListener("abort", onAbort);
      this.#pending.set(id, {
        resolve: (r) => (done(), resolve(r)),
        reject: (e) => (done(), reject(e)),
      });
      if (this.#pending.size === 1) this.#port.ref();
      this.#outbox.post({ id, method: req.method, path: req.path, headers, ...(body !== undefined && { body: body.bytes }) }, body?.transfer);
    });
  }

  #settled(id: number): void {
    if (this.#pending.delete(id) && this.#pending.size === 0) this.#port.unref();
  }

  /** Closes the channel; requests in flight fail. */
  close(): void {
    this.#port.close();
  }
}

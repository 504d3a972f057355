// gRPC unary calls to one etcd member on a bare node:http2 session: the storage's reads and writes, without the call
// layers of @grpc/grpc-js (which the watch streams keep). A call is an HTTP/2 POST of one length-prefixed message, its
// answer one message and the grpc-status trailer (the wire format of gRPC's PROTOCOL-HTTP2.md).
import { connect as http2Connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from "node:http2";
import { isIP, connect as netConnect } from "node:net";
import { checkServerIdentity, connect as tlsConnect, type PeerCertificate } from "node:tls";
import type { EtcdTls } from "./client.js";

/** gRPC status codes this module produces or reads (grpc's `status` enum). */
export const GRPC = { UNKNOWN: 2, DEADLINE_EXCEEDED: 4, RESOURCE_EXHAUSTED: 8, INTERNAL: 13, UNAVAILABLE: 14, UNAUTHENTICATED: 16, PERMISSION_DENIED: 7, UNIMPLEMENTED: 12 } as const;

/** A failed call as grpc-js reports one (`code`, `details`), and whether it provably never reached the member. */
export class GrpcCallError extends Error {
  override name = "GrpcCallError";
  constructor(
    readonly code: number,
    /** Mutable as grpc-js's: the client appends why a tunnel to the member failed. */
    public details: string,
    /** True only when no byte of the request can have reached the member, so even a write may be sent again. */
    readonly notSent = false,
  ) {
    super(`${code} ${codeName(code)}: ${details}`);
  }
}

function codeName(code: number): string {
  return Object.entries(GRPC).find(([, c]) => c === code)?.[0] ?? String(code);
}

/** The gRPC status of an answer's HTTP status when the member sent no grpc-status (gRPC's http-grpc-status-mapping). */
function fromHttpStatus(status: number): number {
  if (status === 400) return GRPC.INTERNAL;
  if (status === 401) return GRPC.UNAUTHENTICATED;
  if (status === 403) return GRPC.PERMISSION_DENIED;
  if (status === 404) return GRPC.UNIMPLEMENTED;
  if ([429, 502, 503, 504].includes(status)) return GRPC.UNAVAILABLE;
  return GRPC.UNKNOWN;
}

/** Sessions on which the member has answered (its SETTINGS): requests are written only to those, as grpc-js does. */
const READY = new WeakSet<ClientHttp2Session>();

/** The largest answer taken (grpc-js's `grpc.max_receive_message_length` as the client set it before). */
const MAX_MESSAGE_BYTES = 64 << 20;

export interface UnaryTarget {
  /** The member's URL (`https://host:port` or `http://host:port`): the authority calls name, and the TLS host name. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** A loopback `127.0.0.1:port` to dial instead of the member (the egress proxy's forwarder). */
  readonly via?: string;
}

/** Unary calls to one member over one HTTP/2 session, opened at the first call and again after it is lost. */
export class UnaryChannel {
  #session: { readonly session: ClientHttp2Session; readonly ready: Promise<void> } | undefined;
  #closed = false;

  constructor(
    private readonly target: UnaryTarget,
    private readonly tls: EtcdTls | undefined,
  ) {}

  /** Sends `message` (a serialized request) to `path` (`/etcdserverpb.KV/Put`); the answer's message bytes. */
  call(path: string, message: Uint8Array, deadline: number): Promise<Buffer> {
    if (this.#closed) return Promise.reject(new GrpcCallError(GRPC.UNAVAILABLE, "the channel is closed", true));
    const { session, ready } = this.#open();
    if (READY.has(session)) return this.#send(session, path, message, deadline);
    // Not written before the member answers: a call that fails until then was never sent, so even a write may be retried.
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new GrpcCallError(GRPC.DEADLINE_EXCEEDED, "Deadline exceeded while connecting", true));
        // A member that never answers the opening (a silent host, a forwarder stuck dialing): the next call dials again.
        this.#drop(session);
      }, Math.max(1, deadline - Date.now()));
      ready.then(
        () => (clearTimeout(timer), resolve()),
        (err: unknown) => (clearTimeout(timer), reject(err)),
      );
    }).then(() => this.#send(session, path, message, deadline));
  }

  #send(session: ClientHttp2Session, path: string, message: Uint8Array, deadline: number): Promise<Buffer> {
    const timeoutMs = Math.max(1, deadline - Date.now());
    return new Promise<Buffer>((resolve, reject) => {
      const frame = Buffer.allocUnsafe(5 + message.byteLength);
      frame[0] = 0;
      frame.writeUInt32BE(message.byteLength, 1);
      frame.set(message, 5);
      let stream: ClientHttp2Stream;
      try {
        stream = session.request({
          [constants.HTTP2_HEADER_METHOD]: "POST",
          [constants.HTTP2_HEADER_PATH]: path,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": `${timeoutMs}m`,
        });
      } catch (err) {
        // The session closed meanwhile (the channel's close, a GOAWAY): nothing was written.
        return reject(new GrpcCallError(GRPC.UNAVAILABLE, `No connection established: ${(err as Error).message}`, true));
      }
      let settled = false;
      const fail = (err: GrpcCallError): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
        reject(err);
      };
      const timer = setTimeout(() => {
        // A member that does not answer in time may be hung: the next call opens a new session (grpc-js's keepalive
        // would drop this one too, later).
        fail(new GrpcCallError(GRPC.DEADLINE_EXCEEDED, "Deadline exceeded"));
        this.#drop(session);
      }, timeoutMs);
      let head: IncomingHttpHeaders | undefined;
      const chunks: Buffer[] = [];
      let length = 0;
      stream.on("response", (headers) => (head = headers));
      stream.on("data", (chunk: Buffer) => {
        length += chunk.length;
        if (length > MAX_MESSAGE_BYTES + 5) fail(new GrpcCallError(GRPC.RESOURCE_EXHAUSTED, `the answer exceeds ${MAX_MESSAGE_BYTES} bytes`));
        else chunks.push(chunk);
      });
      const finish = (trailers: IncomingHttpHeaders): void => {
        if (settled) return;
        if (head === undefined) return fail(this.#lost(new Error("the stream ended without an answer"), stream.rstCode));
        const status = trailers["grpc-status"] ?? head["grpc-status"];
        if (status === undefined) {
          const http = Number(head[constants.HTTP2_HEADER_STATUS] ?? 0);
          return fail(new GrpcCallError(http === 200 ? GRPC.INTERNAL : fromHttpStatus(http), http === 200 ? "the answer has no grpc-status" : `HTTP status ${http}`));
        }
        if (status !== "0") {
          const text = trailers["grpc-message"] ?? head["grpc-message"];
          return fail(new GrpcCallError(Number(status), typeof text === "string" ? decodeMessage(text) : ""));
        }
        const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) return fail(new GrpcCallError(GRPC.INTERNAL, "the answer is not one uncompressed gRPC message"));
        settled = true;
        clearTimeout(timer);
        resolve(body.subarray(5));
      };
      let trailers: IncomingHttpHeaders = {};
      stream.on("trailers", (t) => (trailers = t));
      stream.on("end", () => finish(trailers));
      stream.on("error", (err: Error) => fail(this.#lost(err, stream.rstCode)));
      stream.on("close", () => {
        if (!settled) fail(this.#lost(new Error(`the stream closed (HTTP/2 code ${stream.rstCode})`), stream.rstCode));
      });
      stream.end(frame);
    });
  }

  /**
   * Why a request written to a ready session failed below gRPC: never processed when the member refused the stream
   * (REFUSED_STREAM, as after its GOAWAY); otherwise it may have reached the member.
   */
  #lost(err: Error, rstCode: number | undefined): GrpcCallError {
    const notSent = rstCode === constants.NGHTTP2_REFUSED_STREAM;
    const cause = err.message.replace(/^The pending stream has been canceled \(caused by: (.*)\)$/, "$1");
    return new GrpcCallError(GRPC.UNAVAILABLE, notSent ? `No connection established: ${cause}` : `connection lost: ${cause}`, notSent);
  }

  #open(): { readonly session: ClientHttp2Session; readonly ready: Promise<void> } {
    const open = this.#session;
    if (open && !open.session.closed && !open.session.destroyed) return open;
    const t = this.target;
    // The member's certificate is checked for the endpoint's host, also when the socket goes to a forwarder.
    const tls = t.tls
      ? { ca: this.tls?.ca, cert: this.tls?.cert, key: this.tls?.key, ...(isIP(t.host) ? {} : { servername: t.host }), ALPNProtocols: ["h2"], checkServerIdentity: (_: string, cert: PeerCertificate) => checkServerIdentity(t.host, cert) }
      : undefined;
    const via = t.via ? parseVia(t.via) : undefined;
    const session = http2Connect(t.url, {
      ...tls,
      // Through the egress forwarder the socket goes to the loopback address; TLS still checks the member's name.
      ...(via && { createConnection: () => (tls ? tlsConnect({ ...tls, host: via.host, port: via.port }) : netConnect(via.port, via.host)) }),
    });
    let why = "the connection closed before the member answered";
    const ready = new Promise<void>((resolve, reject) => {
      session.once("remoteSettings", () => {
        READY.add(session);
        resolve();
      });
      session.once("close", () => reject(new GrpcCallError(GRPC.UNAVAILABLE, `No connection established: ${why}`, true)));
    });
    // Each call waiting for it handles the failure; a session nobody waits on must not raise an unhandled rejection.
    ready.catch(() => undefined);
    session.on("error", (err: Error) => {
      why = err.message;
      this.#drop(session);
    });
    // After a GOAWAY the streams the member took still finish; new calls go on a new session.
    session.on("goaway", () => this.#detach(session));
    session.on("close", () => this.#detach(session));
    this.#session = { session, ready };
    return this.#session;
  }

  #detach(session: ClientHttp2Session): void {
    if (this.#session?.session === session) this.#session = undefined;
  }

  #drop(session: ClientHttp2Session): void {
    this.#detach(session);
    if (!session.destroyed) session.destroy();
  }

  /** New calls fail at once; calls in flight still get their answers (as a closed grpc-js channel lets them finish). */
  close(): void {
    this.#closed = true;
    const open = this.#session;
    this.#session = undefined;
    if (open && !open.session.closed) open.session.close();
  }
}

function parseVia(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(":");
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

/** grpc-message is percent-encoded (gRPC's PROTOCOL-HTTP2.md); a malformed escape is left as it came. */
function decodeMessage(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

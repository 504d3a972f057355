// One HTTP/1.1 response read from a connection's bytes: the status line, the headers, and a Content-Length, chunked or
// read-until-close body. The reader of the lean socket client (socket-transport.ts); it never trusts a length it read.
import type { IncomingHttpHeaders } from "node:http";

export interface Http1Response {
  readonly status: number;
  /** Names in lower case; repeated headers joined or dropped as node's IncomingMessage has them (addHeader). */
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** The body as the sender handed it over, when it was text (the in-thread channel): read as it is, not decoded again. */
  readonly text?: string;
  /** Whether the connection may carry another request. */
  readonly keepAlive: boolean;
}

/** A response the reader refuses: the connection is then closed. */
export class MalformedResponse extends Error {
  readonly code = "HPE_INVALID_RESPONSE";
}

/** Node's own limit on a response's header section is 16 KiB; a server here may send longer Warning headers. */
const MAX_HEAD = 64 * 1024;
const MAX_CHUNK_LINE = 1024;
const CRLF = Buffer.from("\r\n");
const EMPTY = Buffer.alloc(0);
const END_OF_HEAD = Buffer.from("\r\n\r\n");
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/;
/** An HTTP token (RFC 9110 §5.6.2): what a header name may be, in a request as in a response. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

interface Head {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly keepAlive: boolean;
  /** Body bytes by Content-Length, or "chunked", or "close" (until the connection ends), or 0 (none). */
  readonly framing: number | "chunked" | "close";
}

/**
 * Reads the response to one request (`method`): `push` the connection's bytes until it returns the response and the
 * bytes after it; `end` when the connection closed. Throws MalformedResponse for anything that is not HTTP/1.x.
 * Body bytes are kept as the pieces that arrived and joined once: a body of many megabytes (a LIST page) arrives in
 * hundreds of pieces, and joining at every piece would copy it hundreds of times.
 */
export class ResponseReader {
  readonly #method: string;
  /** Bytes not yet consumed: the head, or a chunked body's size lines and trailers (each bounded in length). */
  #pending: Buffer = EMPTY;
  #head: Head | undefined;
  /** Body pieces so far, and their length. */
  readonly #body: Buffer[] = [];
  #bodyLength = 0;
  /** Chunked bodies: bytes left of the current chunk's data, whether its CRLF is still to come, whether the last chunk was read. */
  #chunkLeft = 0;
  #chunkEndDue = false;
  #lastChunk = false;

  constructor(method: string) {
    this.#method = method;
  }

  push(data: Buffer): { readonly response: Http1Response; readonly rest: Buffer } | undefined {
    if (this.#head === undefined) {
      this.#pending = this.#pending.length === 0 ? data : Buffer.concat([this.#pending, data]);
      for (;;) {
        const end = this.#pending.indexOf(END_OF_HEAD);
        if (end < 0) {
          if (this.#pending.length > MAX_HEAD) throw new MalformedResponse(`response headers longer than ${MAX_HEAD} bytes`);
          return undefined;
        }
        const head = parseHead(this.#pending.subarray(0, end).toString("latin1"), this.#method);
        this.#pending = this.#pending.subarray(end + END_OF_HEAD.length);
        // 1xx answers (100 Continue) come before the real one.
        if (head.status >= 200) {
          this.#head = head;
          break;
        }
      }
      data = this.#pending;
      this.#pending = EMPTY;
    }
    const head = this.#head;
    if (head.framing === "chunked") return this.#chunked(head, data);
    if (head.framing === "close") {
      this.#keep(data);
      return undefined;
    }
    const wanted = head.framing - this.#bodyLength;
    if (data.length < wanted) {
      this.#keep(data);
      return undefined;
    }
    this.#keep(data.subarray(0, wanted));
    return this.#done(head, data.subarray(wanted));
  }

  /** The connection ended: the response when its body runs until the close, else undefined (it was cut short). */
  end(): Http1Response | undefined {
    const head = this.#head;
    return head?.framing === "close" ? { status: head.status, headers: head.headers, body: this.#joined(), keepAlive: false } : undefined;
  }

  #chunked(head: Head, data: Buffer): { readonly response: Http1Response; readonly rest: Buffer } | undefined {
    for (;;) {
      if (this.#chunkLeft > 0) {
        // Inside a chunk's data: take what there is of it without joining.
        const take = Math.min(this.#chunkLeft, data.length);
        this.#keep(data.subarray(0, take));
        this.#chunkLeft -= take;
        data = data.subarray(take);
        if (this.#chunkLeft > 0) return undefined;
        this.#chunkEndDue = true;
      }
      if (data.length > 0) this.#pending = this.#pending.length === 0 ? data : Buffer.concat([this.#pending, data]);
      data = EMPTY;
      if (this.#chunkEndDue) {
        if (this.#pending.length < CRLF.length) return undefined;
        if (this.#pending[0] !== 0x0d || this.#pending[1] !== 0x0a) throw new MalformedResponse("a chunk does not end with CRLF");
        this.#pending = this.#pending.subarray(CRLF.length);
        this.#chunkEndDue = false;
      }
      const eol = this.#pending.indexOf(CRLF);
      if (eol < 0) {
        if (this.#pending.length > (this.#lastChunk ? MAX_HEAD : MAX_CHUNK_LINE)) throw new MalformedResponse("a chunk size line or trailer is too long");
        return undefined;
      }
      const line = this.#pending.subarray(0, eol).toString("latin1");
      const after = this.#pending.subarray(eol + CRLF.length);
      if (this.#lastChunk) {
        // Trailers, up to the empty line that ends the message; their contents are not used.
        this.#pending = after;
        if (line === "") return this.#done(head, after);
        continue;
      }
      const size = /^([0-9A-Fa-f]{1,8})(?:;.*)?$/.exec(line);
      if (!size) throw new MalformedResponse(`bad chunk size line ${JSON.stringify(line.slice(0, 40))}`);
      const n = parseInt(size[1]!, 16);
      if (n === 0) this.#lastChunk = true;
      else this.#chunkLeft = n;
      this.#pending = EMPTY;
      data = after;
    }
  }

  #keep(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#body.push(piece);
    this.#bodyLength += piece.length;
  }

  #joined(): Buffer {
    return this.#body.length === 1 ? this.#body[0]! : Buffer.concat(this.#body, this.#bodyLength);
  }

  #done(head: Head, rest: Buffer): { readonly response: Http1Response; readonly rest: Buffer } {
    return { response: { status: head.status, headers: head.headers, body: this.#joined(), keepAlive: head.keepAlive }, rest };
  }
}

// Node's IncomingMessage keeps the first of these when a message repeats them (the others are joined with ", ").
const FIRST_WINS = new Set([
  "age", "authorization", "content-length", "content-type", "etag", "expires", "from", "host", "if-modified-since",
  "if-unmodified-since", "last-modified", "location", "max-forwards", "proxy-authorization", "referer", "retry-after",
  "server", "user-agent",
]);

/**
 * Adds one header line (`name` in lower case) as node's IncomingMessage does: set-cookie a list, cookie joined with
 * "; ", FIRST_WINS kept at their first value, the others joined with ", ". Both ends of the in-thread channel use it.
 */
export function addHeader(headers: Record<string, string | string[] | undefined>, name: string, value: string): void {
  const before = headers[name];
  if (name === "set-cookie") (headers[name] = (before as string[] | undefined) ?? []).push(value);
  else if (before === undefined) headers[name] = value;
  else if (!FIRST_WINS.has(name)) headers[name] = `${before as string}${name === "cookie" ? "; " : ", "}${value}`;
}

function parseHead(text: string, method: string): Head {
  const lines = text.split("\r\n");
  const status = STATUS_LINE.exec(lines[0]!);
  if (!status) throw new MalformedResponse(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]!.slice(0, 60))}`);
  const headers: IncomingHttpHeaders = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    const name = colon > 0 ? line.slice(0, colon).toLowerCase() : "";
    if (!HEADER_NAME.test(name)) throw new MalformedResponse(`bad header line ${JSON.stringify(line.slice(0, 60))}`);
    const value = line.slice(colon + 1).trim();
    // Node's parser refuses a second length: which of the two frames the body is not knowable.
    if (name === "content-length" && headers[name] !== undefined) throw new MalformedResponse("the response repeats Content-Length");
    addHeader(headers, name, value);
  }
  const code = Number(status[2]);
  const connection = String(headers.connection ?? "").toLowerCase();
  const keepAlive = status[1] === "1" ? !/\bclose\b/.test(connection) : /\bkeep-alive\b/.test(connection);
  const encoding = String(headers["transfer-encoding"] ?? "").toLowerCase();
  const lengthText = headers["content-length"] as string | undefined;
  let framing: Head["framing"];
  if (method === "HEAD" || code < 200 || code === 204 || code === 304) framing = 0;
  else if (encoding !== "") {
    if (encoding !== "chunked") throw new MalformedResponse(`transfer-encoding ${encoding} is not read here`);
    framing = "chunked";
  } else if (lengthText !== undefined) {
    if (!/^\d{1,15}$/.test(lengthText)) throw new MalformedResponse(`bad content-length ${JSON.stringify(lengthText.slice(0, 40))}`);
    framing = Number(lengthText);
  } else framing = "close";
  return { status: code, headers, keepAlive: keepAlive && framing !== "close", framing };
}

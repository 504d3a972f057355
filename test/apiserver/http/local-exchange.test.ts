// The in-thread channel's request and response objects against node's own HTTP server: the same header fields
// (repeats joined or dropped as node does, headersDistinct, rawHeaders), the same body, the same answer as a client
// of node's server reads it. Random header sets and answers (fast-check) on both.
import { connect } from "node:net";
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeader, type ServerResponse } from "node:http";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalRequest, LocalResponse } from "../../../src/apiserver/http/local-exchange.js";
import { tempDir } from "../../fixtures/temp-dir.js";

type Seen = { headers: Record<string, unknown>; raw: string[]; distinct: Record<string, string[]>; body: string };
type Answer = (res: ServerResponse | LocalResponse) => void;

let socketPath = "";
let server: ReturnType<typeof createServer>;
/** What the next request to node's server is answered with, and what it saw. */
let answer: Answer = (res) => res.end();
let seen: Seen | undefined;

beforeAll(async () => {
  socketPath = join(tempDir(), "node.sock");
  server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      seen = { headers: { ...req.headers }, raw: [...req.rawHeaders], distinct: { ...req.headersDistinct } as Record<string, string[]>, body };
      answer(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Node's server given these header lines (in this order, Host last as the channel adds it) and body, as raw bytes. */
function nodeSees(headers: Record<string, string[]>, body: string): Promise<Seen> {
  let head = "POST /x HTTP/1.1\r\n";
  for (const [name, values] of Object.entries(headers)) for (const v of values) head += `${name}: ${v}\r\n`;
  head += `Host: localhost\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  seen = undefined;
  answer = (res) => res.end();
  return new Promise((resolve, reject) => {
    const s = connect(socketPath, () => s.end(head + body));
    s.on("data", () => undefined);
    s.on("error", reject);
    s.on("close", () => (seen ? resolve(seen) : reject(new Error("node's server saw nothing"))));
  });
}

/** The same through LocalRequest: its fields, and the body its stream gives a reader. */
async function localSees(headers: Record<string, string[]>, body: string): Promise<Seen> {
  const req = new LocalRequest({ id: 1, method: "POST", path: "/x", headers, body: Buffer.from(body) });
  let text = "";
  await new Promise<void>((resolve) => {
    req.on("data", (c: Buffer) => (text += c.toString("utf8")));
    req.on("end", resolve);
    req.resume();
  });
  return { headers: { ...req.headers }, raw: [...req.rawHeaders], distinct: { ...req.headersDistinct }, body: text };
}

const headerName = fc.constantFrom("Accept", "authorization", "Content-Type", "User-Agent", "X-Custom", "Impersonate-Group", "Cookie", "set-cookie", "Warning", "Audit-ID", "If-Modified-Since");
const headerValue = fc.stringMatching(/^[!-~]([ !-~]{0,20}[!-~])?$/);
const headerSet = fc.dictionary(headerName, fc.array(headerValue, { minLength: 1, maxLength: 3 }), { maxKeys: 6 });

describe("LocalRequest", () => {
  it("holds the headers, their repeats and the body as node's IncomingMessage does", async () => {
    await fc.assert(
      fc.asyncProperty(headerSet, fc.string({ maxLength: 200 }), async (headers, body) => {
        const [node, local] = [await nodeSees(headers, body), await localSees(headers, body)];
        // Node's own framing headers are not the channel's: the rest must match field for field.
        for (const s of [node, local]) {
          delete s.headers.connection;
          delete s.distinct.connection;
          const at = s.raw.findIndex((v, i) => i % 2 === 0 && v.toLowerCase() === "connection");
          if (at >= 0) s.raw.splice(at, 2);
        }
        expect(local).toEqual(node);
      }),
      { numRuns: 60 },
    );
  });

  it("ends a body-less request at once, and aborts as a dropped connection (aborted, then close)", async () => {
    const req = new LocalRequest({ id: 2, method: "GET", path: "/api", headers: { Authorization: "Bearer x" } });
    expect(req.headers).toMatchObject({ authorization: "Bearer x", host: "localhost" });
    expect(req.headers["content-length"]).toBeUndefined();
    const events: string[] = [];
    req.on("data", () => events.push("data"));
    req.on("end", () => events.push("end"));
    req.resume();
    await new Promise((resolve) => setImmediate(resolve));
    req.on("aborted", () => events.push("aborted"));
    req.on("close", () => events.push("close"));
    req.abort();
    req.abort();
    expect(events).toEqual(["end", "aborted", "close"]);
    expect(req.aborted).toBe(true);
    expect(req.socket.encrypted).toBe(false);
  });

  it("flows once a data listener is added, as node's IncomingMessage, for a reader that never calls resume()", async () => {
    for (const add of ["on", "addListener"] as const) {
      const req = new LocalRequest({ id: 3, method: "POST", path: "/x", headers: {}, body: Buffer.from("{\"a\":1}") });
      const text = await new Promise<string>((resolve) => {
        let body = "";
        req[add]("data", (c: Buffer) => (body += c.toString("utf8")));
        req.on("end", () => resolve(body));
      });
      expect(text).toBe('{"a":1}');
    }
  });
});

/** A client of node's server reading `respond`'s answer to a `method` request. */
function nodeAnswer(method: string, respond: Answer): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  answer = respond;
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path: "/a", agent: false }, (res: IncomingMessage) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

function localAnswer(method: string, respond: Answer): { status: number; headers: IncomingHttpHeaders; body: string } {
  let out: { status: number; headers: IncomingHttpHeaders; body: string } | undefined;
  const res = new LocalResponse(method, (status, headers, body) => (out = { status, headers, body: typeof body === "string" ? body : Buffer.from(body).toString("utf8") }));
  respond(res);
  if (!out) throw new Error("no answer delivered");
  return out;
}

/** Node's connection and framing headers are the socket's, not the answer's. */
function withoutFraming(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _c, date: _d, "keep-alive": _k, "transfer-encoding": _t, ...rest } = headers;
  return rest;
}

describe("LocalResponse", () => {
  const plan = fc.record({
    status: fc.constantFrom(200, 201, 204, 304, 404, 500),
    set: fc.dictionary(fc.constantFrom("Audit-Id", "Content-Type", "Warning", "X-A"), fc.oneof(headerValue, fc.array(headerValue, { minLength: 1, maxLength: 3 })), { maxKeys: 3 }),
    head: fc.dictionary(fc.constantFrom("content-type", "warning", "x-b", "Retry-After"), fc.oneof(headerValue, fc.integer({ min: 0, max: 99 })), { maxKeys: 3 }),
    cookies: fc.array(headerValue, { maxLength: 2 }),
    chunks: fc.array(fc.string({ maxLength: 50 }), { maxLength: 3 }),
    method: fc.constantFrom("GET", "HEAD", "POST"),
  });

  it("hands over the answer a client of node's server reads: status, headers, body (none for HEAD, 204, 304)", async () => {
    await fc.assert(
      fc.asyncProperty(plan, async (p) => {
        const body = p.chunks.join("");
        const respond: Answer = (res) => {
          for (const [k, v] of Object.entries(p.set)) res.setHeader(k, v as OutgoingHttpHeader);
          if (p.cookies.length > 0) res.setHeader("Set-Cookie", p.cookies);
          res.writeHead(p.status, { ...p.head, "content-length": String(Buffer.byteLength(body)) });
          for (const c of p.chunks.slice(0, -1)) res.write(c);
          res.end(p.chunks.at(-1));
        };
        const [node, local] = [await nodeAnswer(p.method, respond), localAnswer(p.method, respond)];
        expect({ ...local, headers: withoutFraming(local.headers) }).toEqual({ ...node, headers: withoutFraming(node.headers) });
      }),
      { numRuns: 60 },
    );
  });

  it("refuses headers after the head as node does, emits finish then close, and delivers nothing once destroyed", () => {
    const delivered: number[] = [];
    const res = new LocalResponse("GET", (status) => delivered.push(status));
    const events: string[] = [];
    res.on("finish", () => events.push("finish"));
    res.on("close", () => events.push("close"));
    res.writeHead(201, { "Content-Type": "application/json" });
    expect(() => res.setHeader("X", "1")).toThrow(expect.objectContaining({ code: "ERR_HTTP_HEADERS_SENT" }));
    expect(() => res.writeHead(200)).toThrow(expect.objectContaining({ code: "ERR_HTTP_HEADERS_SENT" }));
    res.end("{}");
    res.end("again");
    expect(delivered).toEqual([201]);
    expect(events).toEqual(["finish", "close"]);

    const gone = new LocalResponse("GET", (status) => delivered.push(status));
    const closed: string[] = [];
    gone.on("close", () => closed.push("close"));
    // No "error" listener: destroying with an error must not throw (a socket's error nobody listens to is not a crash here).
    gone.destroy(new Error("client left"));
    gone.end("late");
    expect(closed).toEqual(["close"]);
    expect(delivered).toEqual([201]);
  });
});

// The lean HTTP/1.1 client of the unix-domain socket: against node's own HTTP server, every framing a server may
// answer with, kept and closed connections, aborts and broken connections, and the RestClient on top of it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { MalformedResponse, ResponseReader } from "../../src/client/http1-response.js";
import { createClient } from "../../src/client/rest-client.js";
import { InvalidRequest, SocketTransport } from "../../src/client/socket-transport.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { restConfig } from "./fixtures/config.js";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const cleanup: Array<() => void> = [];
afterEach(() => cleanup.splice(0).forEach((f) => f()));

/** A node HTTP server on a fresh unix-domain socket; counts the connections it accepted. */
async function serve(handler: Handler): Promise<{ path: string; connections: () => number; server: Server }> {
  const path = join(tempDir(), "api.sock");
  let connections = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => handler(req, res, body));
  });
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanup.push(() => server.close());
  return { path, connections: () => connections, server };
}

function transport(path: string, maxSockets?: number): SocketTransport {
  const t = new SocketTransport(path, maxSockets);
  cleanup.push(() => t.close());
  return t;
}

const echo: Handler = (req, res, body) => {
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers.authorization ?? null }));
};

describe("SocketTransport", () => {
  it("sends method, target, headers and body, and keeps one connection for requests in turn", async () => {
    const s = await serve(echo);
    const t = transport(s.path);
    // A Content-Length among the headers is replaced by the body's own (node's server refuses two).
    const res = await t.request({ method: "PUT", path: "/x", headers: { "content-length": "99" }, body: Buffer.from("abc") });
    expect(JSON.parse(res.body.toString())).toMatchObject({ method: "PUT", body: "abc" });
    for (let i = 0; i < 5; i++) {
      const res = await t.request({ method: "POST", path: `/apis/x?i=${i}`, headers: { Authorization: "Bearer t" }, body: Buffer.from(`{"n":${i}}`) });
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(res.body.toString())).toEqual({ method: "POST", url: `/apis/x?i=${i}`, body: `{"n":${i}}`, auth: "Bearer t" });
    }
    expect(s.connections()).toBe(1);
  });

  it("reads chunked bodies, bodies without one (204, HEAD) and a body that runs until the server closes", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/chunked") {
        res.write("hello, ");
        setTimeout(() => res.end("world"), 5);
      } else if (req.url === "/none") {
        res.statusCode = 204;
        res.end();
      } else if (req.url === "/close") {
        // An HTTP/1.0-style answer: no length, the end of the connection ends the body.
        res.socket!.end("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end");
      } else res.end("head");
    });
    const t = transport(s.path);
    expect((await t.request({ method: "GET", path: "/chunked", headers: {} })).body.toString()).toBe("hello, world");
    const none = await t.request({ method: "DELETE", path: "/none", headers: {} });
    expect([none.status, none.body.length]).toEqual([204, 0]);
    const head = await t.request({ method: "HEAD", path: "/head", headers: {} });
    expect([head.status, head.body.length]).toEqual([200, 0]);
    const close = await t.request({ method: "GET", path: "/close", headers: {} });
    expect([close.status, close.body.toString(), close.keepAlive]).toEqual([200, "until the end", false]);
    // The pool noticed the close: the next request opens a new connection and succeeds.
    expect((await t.request({ method: "GET", path: "/chunked", headers: {} })).body.toString()).toBe("hello, world");
    expect(s.connections()).toBe(2);
  });

  it("fails a request whose connection breaks mid-response with the socket's code, and stays usable", async () => {
    const s = await serve((req, res) => {
      if (req.url === "/break") {
        res.writeHead(200, { "Content-Length": "100" });
        res.write("only part");
        setTimeout(() => res.socket!.destroy(), 5);
      } else res.end("fine");
    });
    const t = transport(s.path);
    await expect(t.request({ method: "GET", path: "/break", headers: {} })).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await t.request({ method: "GET", path: "/ok", headers: {} })).body.toString()).toBe("fine");
  });

  it("rejects with the abort reason when aborted, before or while waiting for the answer", async () => {
    const s = await serve((req, res) => (req.url === "/slow" ? setTimeout(() => res.end("late"), 2_000) : res.end("now")));
    const t = transport(s.path);
    const controller = new AbortController();
    const pending = t.request({ method: "GET", path: "/slow", headers: {}, signal: controller.signal });
    setTimeout(() => controller.abort(new Error("stop")), 20);
    await expect(pending).rejects.toThrow("stop");
    await expect(t.request({ method: "GET", path: "/now", headers: {}, signal: AbortSignal.abort(new Error("before")) })).rejects.toThrow("before");
    expect((await t.request({ method: "GET", path: "/now", headers: {} })).body.toString()).toBe("now");
  });

  it("opens at most maxSockets connections; more requests wait for one", async () => {
    let open = 0;
    let most = 0;
    const s = await serve((_req, res) => {
      open++;
      most = Math.max(most, open);
      setTimeout(() => {
        open--;
        res.end("done");
      }, 10);
    });
    const t = transport(s.path, 2);
    const answers = await Promise.all(Array.from({ length: 7 }, (_, i) => t.request({ method: "GET", path: `/${i}`, headers: {} })));
    expect(answers.map((a) => a.body.toString())).toEqual(Array(7).fill("done"));
    expect(most).toBe(2);
    expect(s.connections()).toBe(2);
  });

  it("refuses targets and headers that would break the message, before sending anything", async () => {
    const s = await serve(echo);
    const t = transport(s.path);
    await expect(t.request({ method: "GET", path: "/a b", headers: {} })).rejects.toBeInstanceOf(InvalidRequest);
    await expect(t.request({ method: "GET", path: "/a", headers: { "X-A": "1\r\nX-Injected: yes" } })).rejects.toBeInstanceOf(InvalidRequest);
    await expect(t.request({ method: "GET", path: "/a", headers: { "Bad Name": "1" } })).rejects.toBeInstanceOf(InvalidRequest);
    await expect(t.request({ method: "GET", path: "/\u2603", headers: {} })).rejects.toBeInstanceOf(InvalidRequest);
    await expect(t.request({ method: "GET", path: "/a", headers: { "X-A": "\u2603" } })).rejects.toBeInstanceOf(InvalidRequest);
    expect(s.connections()).toBe(0);
  });
});

describe("RestClient over a socket path", () => {
  it("answers, maps errors to typed errors, and still streams watches", async () => {
    const s = await serve((req, res, body) => {
      if (req.url?.startsWith("/api/v1/namespaces/missing")) {
        res.writeHead(404, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404, message: 'namespaces "missing" not found' }));
      } else if (req.url?.includes("watch=")) {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "a" } } })}\n`);
        setTimeout(() => res.end(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "b" } } })}\n`), 10);
      } else echo(req, res, body);
    });
    const client = createClient(restConfig({ server: "http://localhost", socketPath: s.path, credentials: { type: "token", token: "secret" } }));
    cleanup.push(() => client.close());
    expect(await client.request("GET", "/api/v1/namespaces")).toMatchObject({ method: "GET", url: "/api/v1/namespaces", auth: "Bearer secret" });
    expect(await client.request("POST", "/api/v1/namespaces", { metadata: { name: "x" } })).toMatchObject({ method: "POST", body: '{"metadata":{"name":"x"}}' });
    const missing = await client.request("GET", "/api/v1/namespaces/missing").catch((e: unknown) => e);
    expect(isPlatformError(missing) && missing.code).toBe("NOT_FOUND");
    const controller = new AbortController();
    const stream = await client.openStream("/api/v1/namespaces?watch=true", { signal: controller.signal });
    let text = "";
    for await (const chunk of stream) text += String(chunk);
    expect(text.trim().split("\n").map((l) => JSON.parse(l).object.metadata.name)).toEqual(["a", "b"]);
  });
});

describe("ResponseReader", () => {
  const whole = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nWarning: 299 - \"a\"\r\nWarning: 299 - \"b\"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n";

  it("reads a response however its bytes are split, and hands back what follows it", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: whole.length }), { maxLength: 8 }), (cuts) => {
        const bytes = Buffer.from(`${whole}NEXT`, "latin1");
        const at = [...new Set(cuts)].sort((a, b) => a - b);
        const reader = new ResponseReader("GET");
        let done: ReturnType<ResponseReader["push"]>;
        let from = 0;
        for (const to of [...at, bytes.length]) {
          done = reader.push(bytes.subarray(from, to));
          from = to;
          if (done) break;
        }
        expect(done!.response.body.toString()).toBe("hello, world");
        expect(done!.response.headers.warning).toBe('299 - "a", 299 - "b"');
        expect(done!.response.keepAlive).toBe(true);
        expect(Buffer.concat([done!.rest, bytes.subarray(from)]).toString()).toBe("NEXT");
      }),
    );
  });

  it("keeps repeated headers as node's IncomingMessage does: the first of a single-valued one, the others joined", () => {
    const head = "HTTP/1.1 200 OK\r\nContent-Type: a\r\nContent-Type: b\r\nWarning: 1\r\nWarning: 2\r\nSet-Cookie: c=1\r\nSet-Cookie: d=2\r\nContent-Length: 0\r\n\r\n";
    const done = new ResponseReader("GET").push(Buffer.from(head));
    expect(done!.response.headers).toEqual({ "content-type": "a", warning: "1, 2", "set-cookie": ["c=1", "d=2"], "content-length": "0" });
  });

  it("gathers a large body from 384 pieces, by length or in one large chunk", () => {
    const body = Buffer.alloc(24 * 1024 * 1024, "a");
    for (const head of [`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`, `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n`]) {
      const chunked = head.includes("chunked");
      const bytes = Buffer.concat([Buffer.from(head), body, Buffer.from(chunked ? "\r\n0\r\n\r\n" : "")]);
      const reader = new ResponseReader("GET");
      let done: ReturnType<ResponseReader["push"]>;
      for (let at = 0; at < bytes.length && !done; at += 65_536) done = reader.push(bytes.subarray(at, at + 65_536));
      expect(done!.response.body.equals(body)).toBe(true);
      expect(done!.rest.length).toBe(0);
    }
  });

  it("refuses what is not HTTP/1.x and never throws anything else", () => {
    expect(() => new ResponseReader("GET").push(Buffer.from("SSH-2.0-OpenSSH\r\n\r\n"))).toThrow(MalformedResponse);
    expect(() => new ResponseReader("GET").push(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"))).toThrow(MalformedResponse);
    expect(() => new ResponseReader("GET").push(Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"))).toThrow(MalformedResponse);
    // Two lengths: which one frames the body cannot be known (node's parser refuses it too).
    expect(() => new ResponseReader("GET").push(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok"))).toThrow(/repeats Content-Length/);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (noise, prefixed) => {
        const bytes = Buffer.concat([Buffer.from(prefixed ? "HTTP/1.1 200 OK\r\n" : ""), Buffer.from(noise)]);
        try {
          new ResponseReader("GET").push(bytes);
        } catch (err) {
          expect(err).toBeInstanceOf(MalformedResponse);
        }
      }),
    );
  });
});

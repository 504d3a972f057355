// The etcd client's unary calls on bare HTTP/2 (storage/etcd/unary.ts) against HTTP/2 servers that answer as a member
// might: gRPC statuses and messages, HTTP errors, hangs, refused streams, lost connections and garbage. What matters
// most is `notSent`, which lets the client send a write again: true only when nothing can have reached the member.
// (The etcd suites run the same calls against real etcd members.)
import { createServer as createH2Server, constants, type Http2Server, type ServerHttp2Stream } from "node:http2";
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { GRPC, GrpcCallError, UnaryChannel } from "../../../src/apiserver/storage/etcd/unary.js";

const servers: (Http2Server | Server)[] = [];
const channels: UnaryChannel[] = [];
afterEach(async () => {
  for (const c of channels.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
});

/** A loopback HTTP/2 server whose every stream `answer` handles, once the request's body has arrived. */
async function member(answer: (stream: ServerHttp2Stream, body: Buffer) => void): Promise<{ port: number; requests: Buffer[] }> {
  const requests: Buffer[] = [];
  const server = createH2Server();
  server.on("stream", (stream) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      requests.push(body);
      answer(stream, body);
    });
    stream.on("error", () => undefined);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, requests };
}

function channel(port: number): UnaryChannel {
  const c = new UnaryChannel({ url: `http://127.0.0.1:${port}`, host: "127.0.0.1", port, tls: false }, undefined);
  channels.push(c);
  return c;
}

/** A gRPC message on the wire: flag byte 0 (not compressed), its length big-endian, the message. */
function frame(message: Buffer): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

/** Answers OK with `message` as a gRPC server does: headers, the message, then the status trailer. */
function ok(stream: ServerHttp2Stream, message: Buffer): void {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.end(frame(message));
}

const failure = (p: Promise<unknown>): Promise<GrpcCallError> =>
  p.then(
    () => {
      throw new Error("the call succeeded");
    },
    (err: unknown) => {
      expect(err).toBeInstanceOf(GrpcCallError);
      return err as GrpcCallError;
    },
  );

const soon = (ms = 2000) => Date.now() + ms;

describe("UnaryChannel", () => {
  it("sends one framed message with gRPC's headers and answers the message it gets back", async () => {
    let headers: Record<string, unknown> = {};
    const m = await member((stream, body) => ok(stream, Buffer.concat([Buffer.from("re:"), body.subarray(5)])));
    const server = servers[0] as Http2Server;
    server.on("stream", (_s, h) => (headers = h));
    const answer = await channel(m.port).call("/etcdserverpb.KV/Put", Buffer.from("hello"), soon());
    expect(answer.toString()).toBe("re:hello");
    expect(m.requests[0]).toEqual(frame(Buffer.from("hello")));
    expect(headers).toMatchObject({ ":method": "POST", ":path": "/etcdserverpb.KV/Put", "content-type": "application/grpc", te: "trailers" });
    expect(String(headers["grpc-timeout"])).toMatch(/^\d+m$/);
  });

  it("reads the status and the percent-encoded message of a failed call, in trailers or trailers-only", async () => {
    const m = await member((stream, body) => {
      if (body.subarray(5).toString() === "only") return stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "11", "grpc-message": "etcdserver%3A mvcc%3A required revision has been compacted" }, { endStream: true });
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "9", "grpc-message": "etcdserver%3A request is too large %25" }));
      stream.end();
    });
    const c = channel(m.port);
    const only = await failure(c.call("/x", Buffer.from("only"), soon()));
    expect([only.code, only.details, only.notSent]).toEqual([11, "etcdserver: mvcc: required revision has been compacted", false]);
    expect(only.message).toContain("required revision has been compacted");
    const trailed = await failure(c.call("/x", Buffer.from("trailers"), soon()));
    expect([trailed.code, trailed.details]).toEqual([9, "etcdserver: request is too large %"]);
  });

  it("maps an HTTP error without a gRPC status as gRPC does, and an answer without one as INTERNAL", async () => {
    const m = await member((stream, body) => {
      const kind = body.subarray(5).toString();
      if (kind === "503") return stream.respond({ ":status": 503 }, { endStream: true });
      if (kind === "404") return stream.respond({ ":status": 404 }, { endStream: true });
      stream.respond({ ":status": 200, "content-type": "application/grpc" });
      stream.end(frame(Buffer.from("no status")));
    });
    const c = channel(m.port);
    expect((await failure(c.call("/x", Buffer.from("503"), soon()))).code).toBe(GRPC.UNAVAILABLE);
    expect((await failure(c.call("/x", Buffer.from("404"), soon()))).code).toBe(GRPC.UNIMPLEMENTED);
    expect((await failure(c.call("/x", Buffer.from("none"), soon()))).code).toBe(GRPC.INTERNAL);
  });

  it("ends a call the member does not answer at its deadline, as may-have-been-sent, and then opens a new session", async () => {
    let sessions = 0;
    const m = await member((stream, body) => {
      if (body.subarray(5).toString() === "hang") return;
      ok(stream, Buffer.from("fine"));
    });
    (servers[0] as Http2Server).on("session", () => sessions++);
    const c = channel(m.port);
    const started = Date.now();
    const late = await failure(c.call("/x", Buffer.from("hang"), Date.now() + 300));
    expect([late.code, late.notSent]).toEqual([GRPC.DEADLINE_EXCEEDED, false]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect((await c.call("/x", Buffer.from("next"), soon())).toString()).toBe("fine");
    expect(sessions).toBe(2);
  });

  it("says a request was not sent only when nothing can have reached the member", async () => {
    // Nobody listens: refused.
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await failure(channel(freePort).call("/x", Buffer.from("w"), soon()));
    expect([refused.code, refused.notSent]).toEqual([GRPC.UNAVAILABLE, true]);
    expect(refused.details).toMatch(/^No connection established: .*ECONNREFUSED/);

    // A socket that closes before the member speaks HTTP/2 (a forwarder whose tunnel failed).
    const hangUp = createTcpServer((socket) => socket.destroy());
    servers.push(hangUp);
    await new Promise<void>((resolve) => hangUp.listen(0, "127.0.0.1", resolve));
    const early = await failure(channel((hangUp.address() as AddressInfo).port).call("/x", Buffer.from("w"), soon()));
    expect([early.code, early.notSent]).toEqual([GRPC.UNAVAILABLE, true]);

    // A socket accepted and never answered (a member hung before HTTP/2): not sent, and the next call dials again.
    const held: Socket[] = [];
    const silent = createTcpServer((socket) => void held.push(socket));
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const quiet = channel((silent.address() as AddressInfo).port);
    const unanswered = await failure(quiet.call("/x", Buffer.from("w"), Date.now() + 200));
    expect([unanswered.code, unanswered.notSent]).toEqual([GRPC.DEADLINE_EXCEEDED, true]);
    await failure(quiet.call("/x", Buffer.from("w"), Date.now() + 200));
    expect(held).toHaveLength(2);
    quiet.close();
    for (const socket of held) socket.destroy();

    // The member refused the stream unprocessed.
    const refusing = await member((stream) => stream.close(constants.NGHTTP2_REFUSED_STREAM));
    const unprocessed = await failure(channel(refusing.port).call("/x", Buffer.from("w"), soon()));
    expect([unprocessed.code, unprocessed.notSent]).toEqual([GRPC.UNAVAILABLE, true]);

    // The member got the request, then the connection went: it may have applied it.
    const dropping = await member((stream) => stream.session?.destroy());
    const lost = await failure(channel(dropping.port).call("/x", Buffer.from("w"), soon()));
    expect([lost.code, lost.notSent]).toEqual([GRPC.UNAVAILABLE, false]);
    expect(dropping.requests).toHaveLength(1);

    // The member reset the stream after taking it.
    const resetting = await member((stream) => stream.close(constants.NGHTTP2_INTERNAL_ERROR));
    const reset = await failure(channel(resetting.port).call("/x", Buffer.from("w"), soon()));
    expect(reset.notSent).toBe(false);
  });

  it("lets a call in flight finish when the channel closes, and refuses new ones at once", async () => {
    const m = await member((stream) => setTimeout(() => ok(stream, Buffer.from("late")), 150));
    const c = channel(m.port);
    const inFlight = c.call("/x", Buffer.from("a"), soon());
    await new Promise((resolve) => setTimeout(resolve, 50));
    c.close();
    expect((await inFlight).toString()).toBe("late");
    const after = await failure(c.call("/x", Buffer.from("b"), soon()));
    expect([after.code, after.notSent]).toEqual([GRPC.UNAVAILABLE, true]);
  });

  it("answers any bytes a member sends with the message or a GrpcCallError, never anything else", async () => {
    let reply: Buffer = Buffer.alloc(0);
    const m = await member((stream) => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(reply);
    });
    const c = channel(m.port);
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), fc.boolean(), async (bytes, wellFramed) => {
        const message = Buffer.from(bytes);
        reply = wellFramed ? frame(message) : message;
        const isFrame = reply.length >= 5 && reply[0] === 0 && reply.readUInt32BE(1) === reply.length - 5;
        const result = await c.call("/x", Buffer.from("q"), soon()).then(
          (answer) => ({ answer }),
          (err: unknown) => ({ err }),
        );
        if (isFrame) expect("answer" in result && result.answer.equals(reply.subarray(5))).toBe(true);
        else expect("err" in result && result.err instanceof GrpcCallError && result.err.code === GRPC.INTERNAL).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});

// The in-thread channel's batching: what one end posts in one turn of the event loop crosses as one message (an array),
// in order, a full batch at once; either end takes a lone message too; a batch that cannot be posted fails its
// requests, not the process.
import { createServer } from "node:http";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { describe, expect, it, vi } from "vitest";
import { serveLocalChannels } from "../../src/apiserver/bootstrap/local-channel.js";
import { CHANNEL_MAX_BATCH, ChannelOutbox, ChannelTransport } from "../../src/client/channel-transport.js";
import { createClient } from "../../src/client/index.js";
import { silentLogger } from "../../src/logger.js";

/** A relay between a client's port and the server's: forwards every posted message and records what crossed. */
function relay(serverPort: MessagePort): { clientPort: MessagePort; toServer: unknown[]; toClient: unknown[]; close(): void } {
  const { port1: clientSide, port2: clientPort } = new MessageChannel();
  const toServer: unknown[] = [];
  const toClient: unknown[] = [];
  clientSide.on("message", (m: unknown) => (toServer.push(m), serverPort.postMessage(m)));
  serverPort.on("message", (m: unknown) => (toClient.push(m), clientSide.postMessage(m)));
  return { clientPort, toServer, toClient, close: () => (clientSide.close(), serverPort.close()) };
}

function echoServer() {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => res.end(`${req.url} ${body}`));
  });
  return serveLocalChannels(server, silentLogger());
}

describe("the in-thread channel's batches", () => {
  it("carries one turn's requests in one message and their answers back together, each to its caller", async () => {
    const channels = echoServer();
    const wire = relay(channels.open());
    const client = new ChannelTransport(wire.clientPort);
    const paths = ["/a", "/b", "/c", "/d", "/e"];
    const answers = await Promise.all(paths.map((path, i) => client.request({ method: "POST", path, headers: {}, body: Buffer.from(`#${i}`) })));
    expect(answers.map((a) => a.body.toString())).toEqual(paths.map((p, i) => `${p} #${i}`));
    // Five requests made in one turn: one message of five, in the order they were made.
    expect(wire.toServer).toHaveLength(1);
    expect((wire.toServer[0] as { path: string }[]).map((m) => m.path)).toEqual(paths);
    expect(wire.toClient.flat()).toHaveLength(5);
    expect(wire.toClient.length).toBeLessThan(5);
    // Requests of later turns go in messages of their own.
    for (const path of paths.slice(0, 2)) await client.request({ method: "GET", path, headers: {} });
    expect(wire.toServer).toHaveLength(3);
    wire.close();
    channels.close();
  });

  it("posts a batch once it holds CHANNEL_MAX_BATCH messages, without waiting for the turn's end, the rest at the end", async () => {
    const { port1, port2 } = new MessageChannel();
    const crossed: unknown[][] = [];
    port2.on("message", (m: unknown[]) => crossed.push(m));
    const outbox = new ChannelOutbox<{ n: number }>(port1, () => {});
    const total = 2 * CHANNEL_MAX_BATCH + 3;
    const postedAt: number[] = [];
    for (let n = 0; n < total; n++) {
      outbox.post({ n });
      postedAt.push(outbox.posted);
    }
    // Still in the same turn: the full batches have crossed, the last three wait for the turn's end.
    expect(postedAt[CHANNEL_MAX_BATCH - 2]).toBe(0);
    expect(postedAt[CHANNEL_MAX_BATCH - 1]).toBe(1);
    expect(postedAt[total - 1]).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(outbox.posted).toBe(3);
    await expect.poll(() => crossed.length).toBe(3);
    expect(crossed.map((m) => m.length)).toEqual([CHANNEL_MAX_BATCH, CHANNEL_MAX_BATCH, 3]);
    expect(crossed.flat().map((m) => (m as { n: number }).n)).toEqual([...Array(total).keys()]);
    port1.close();
    port2.close();
  });

  it("answers each of a turn's requests beyond one batch to its caller, in order", async () => {
    const channels = echoServer();
    const wire = relay(channels.open());
    const client = new ChannelTransport(wire.clientPort);
    const paths = Array.from({ length: CHANNEL_MAX_BATCH + 5 }, (_, i) => `/r${i}`);
    const answers = await Promise.all(paths.map((path) => client.request({ method: "GET", path, headers: {} })));
    expect(answers.map((a) => a.body.toString())).toEqual(paths.map((p) => `${p} `));
    expect((wire.toServer as unknown[][]).map((m) => m.length)).toEqual([CHANNEL_MAX_BATCH, 5]);
    wire.close();
    channels.close();
  });

  it("serves a lone message and the requests of a batch around a message that is not one", async () => {
    const channels = echoServer();
    const port = channels.open();
    const answers: { id: number; body?: unknown }[] = [];
    port.on("message", (m: unknown) => answers.push(...([m].flat() as { id: number }[])));
    port.postMessage({ id: 7, method: "GET", path: "/lone", headers: {} });
    port.postMessage([{ id: 8, method: "GET", path: "/first", headers: {} }, 42, { id: "x" }, null, { id: 9, method: "GET", path: "/last", headers: {} }]);
    await expect.poll(() => answers.map((a) => a.id).sort()).toEqual([7, 8, 9]);
    expect(answers.find((a) => a.id === 9)?.body).toBe("/last ");
    port.close();
    channels.close();
  });

  it("fails the requests of a batch that cannot be posted, and the process goes on", async () => {
    const { port1, port2 } = new MessageChannel();
    const failed: Array<[unknown, string]> = [];
    const outbox = new ChannelOutbox<unknown>(port1, (m, err) => failed.push([m, err.name]));
    outbox.post({ id: 1 });
    outbox.post({ id: 2, notCloneable: () => 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(failed.map(([m]) => (m as { id: number }).id)).toEqual([1, 2]);
    expect(failed[0]![1]).toBe("DataCloneError");
    port1.close();
    port2.close();
  });

  it("hands a text answer over as text, characters beyond ASCII intact, and bytes only to a reader that asks", async () => {
    const server = createServer((req, res) => {
      res.setHeader("Content-Type", "application/json");
      res.end(JSON.stringify({ path: req.url, note: "grüße € 𝄞" }));
    });
    const channels = serveLocalChannels(server, silentLogger());
    const port = channels.open();
    const transport = new ChannelTransport(port);
    const answer = await transport.request({ method: "GET", path: "/t", headers: {} });
    const expected = JSON.stringify({ path: "/t", note: "grüße € 𝄞" });
    expect(answer.text).toBe(expected);
    expect(answer.body.equals(Buffer.from(expected, "utf8"))).toBe(true);
    // The REST client reads the text as it came: the same object as over a socket.
    const client = createClient({ server: "http://localhost", channel: port, tls: {}, credentials: { type: "none" }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
    expect(await client.request("GET", "/u")).toEqual({ path: "/u", note: "grüße € 𝄞" });
    client.close();
    transport.close();
    channels.close();
  });

});

describe("a streamed answer over the in-thread channel (a watch)", () => {
  /** A server whose /watch flushes its head, then writes a line per `push`, and ends or breaks when told. */
  function streamingServer() {
    const seen: string[] = [];
    let current: import("node:http").ServerResponse | undefined;
    const server = createServer((req, res) => {
      if (req.url !== "/watch") return void res.end("whole");
      res.writeHead(200, { "Content-Type": "application/json" });
      res.flushHeaders();
      current = res;
      res.once("close", () => seen.push("closed"));
    });
    const channels = serveLocalChannels(server, silentLogger());
    return { channels, seen, push: (line: string) => current!.write(`${line}\n`), end: () => current!.end(), broken: () => current!.destroy(new Error("broke")) };
  }

  async function read(body: NodeJS.ReadableStream, until: (text: string) => boolean): Promise<{ text: string; chunks: unknown[] }> {
    const chunks: unknown[] = [];
    let text = "";
    for await (const chunk of body) {
      chunks.push(chunk);
      text += chunk;
      if (until(text)) break;
    }
    return { text, chunks };
  }

  it("resolves at the head, gives the writes as text as they come (a turn's as one chunk), and ends when the server ends", async () => {
    const s = streamingServer();
    const client = new ChannelTransport(s.channels.open());
    const res = await client.open({ method: "GET", path: "/watch", headers: {} });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json");
    const chunks: unknown[] = [];
    let ended = false;
    res.body.on("data", (c: unknown) => chunks.push(c));
    res.body.once("end", () => (ended = true));
    s.push('{"n":1}');
    await vi.waitFor(() => expect(chunks).toEqual(['{"n":1}\n']));
    s.push('{"n":2}');
    s.push("grüße");
    s.end();
    await vi.waitFor(() => expect(ended).toBe(true));
    // The writes of one turn cross as one chunk, as a socket's reader would get them.
    expect(chunks).toEqual(['{"n":1}\n', '{"n":2}\ngrüße\n']);
    // A whole answer asked for as a stream: one piece, then the end.
    const whole = await client.open({ method: "GET", path: "/other", headers: {} });
    expect((await read(whole.body, () => false)).text).toBe("whole");
    // A streamed answer asked for whole: gathered until its end.
    const gathered = client.request({ method: "GET", path: "/watch", headers: {} });
    await vi.waitFor(() => expect(s.channels.inFlight).toBe(1));
    s.push("a");
    s.push("b");
    s.end();
    expect((await gathered).text).toBe("a\nb\n");
    s.channels.close();
  });

  it("ends the server's side when the reader aborts or stops reading, and errors the body when the server breaks off", async () => {
    const s = streamingServer();
    const client = new ChannelTransport(s.channels.open());
    const abort = new AbortController();
    const aborted = await client.open({ method: "GET", path: "/watch", headers: {}, signal: abort.signal });
    abort.abort(new Error("watch stopped"));
    await expect(read(aborted.body, () => false)).rejects.toThrow("watch stopped");
    await vi.waitFor(() => expect(s.seen).toEqual(["closed"]));
    expect(s.channels.inFlight).toBe(0);
    // Leaving the loop destroys the body, which tells the server too.
    const left = await client.open({ method: "GET", path: "/watch", headers: {} });
    s.push("x");
    await read(left.body, (t) => t.includes("x"));
    await vi.waitFor(() => expect(s.seen).toEqual(["closed", "closed"]));
    expect(s.channels.inFlight).toBe(0);
    // The server breaks off mid-answer: the reader hears a reset connection.
    const broken = await client.open({ method: "GET", path: "/watch", headers: {} });
    s.push("y");
    s.broken();
    await expect(read(broken.body, () => false)).rejects.toMatchObject({ code: "ECONNRESET" });
    s.channels.close();
  });
});


// Watch streams: chunk-boundary parsing (property-tested), ERROR events, abort and end of stream over HTTP.
import { Buffer } from "node:buffer";
import { Readable } from "node:stream";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type RestClient } from "../../src/client/rest-client.js";
import type { WatchEvent } from "../../src/client/types.js";
import { AgentPool } from "../../src/client/transport.js";
import { watchEvents } from "../../src/client/watch.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { restConfig } from "./fixtures/config.js";
import { until } from "../fixtures/wait.js";
import { object, sendStatus, startServer, status, type Handler, type TestServer } from "./fixtures/server.js";
import { failure } from "./fixtures/failure.js";

const ctx = { method: "GET", path: "/api/v1/serviceaccounts?watch=true" };

function event(type: string, name: string, extra: Record<string, unknown> = {}): { type: string; object: Record<string, unknown> } {
  return { type, object: object(name, extra) };
}

/** Feeds `bytes` cut at `cuts` through watchEvents and collects what it yields. */
async function collect(bytes: Buffer, cuts: number[] = [], signal = new AbortController().signal): Promise<WatchEvent[]> {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const chunks = [0, ...points].map((start, i) => bytes.subarray(start, points[i] ?? bytes.length));
  const out: WatchEvent[] = [];
  for await (const e of watchEvents(async () => Readable.from(chunks), signal, ctx)) out.push(e);
  return out;
}

const ndjson = (events: unknown[]) => Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(""), "utf8");


describe("watch stream parsing", () => {
  it("yields the same events however the bytes are cut into chunks (multi-byte text included)", async () => {
    const events = fc.array(
      fc.record({ type: fc.constantFrom("ADDED", "MODIFIED", "DELETED", "BOOKMARK"), name: fc.string({ minLength: 1, maxLength: 8 }), note: fc.string({ unit: "grapheme", maxLength: 40 }) }),
      { minLength: 1, maxLength: 12 },
    );
    await fc.assert(
      fc.asyncProperty(events, fc.array(fc.nat({ max: 4000 }), { maxLength: 30 }), async (list, cuts) => {
        const sent = list.map((e) => event(e.type, e.name, { note: e.note }));
        expect(await collect(ndjson(sent), cuts)).toEqual(sent);
      }),
      { numRuns: 150 },
    );
  });

  it("reassembles a 2 MiB object sent in 16 KiB chunks", async () => {
    const big = event("ADDED", "big", { data: "é".repeat(1024 * 1024) });
    const bytes = ndjson([event("ADDED", "a"), big, event("DELETED", "a")]);
    const cuts = Array.from({ length: Math.ceil(bytes.length / 16384) }, (_, i) => i * 16384);
    const got = await collect(bytes, cuts);
    expect(got.map((e) => e.type)).toEqual(["ADDED", "ADDED", "DELETED"]);
    expect(got[1]).toEqual(big);
  });

  it("skips blank lines and takes a last event without its newline", async () => {
    const bytes = Buffer.from(`\n${JSON.stringify(event("ADDED", "a"))}\n\n${JSON.stringify(event("MODIFIED", "a"))}`);
    expect((await collect(bytes)).map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
  });

  it.each([
    ["an ERROR event with a 410 Status", status(410, "Expired", "too old resource version: 5 (10)"), "GONE", "too old resource version: 5 (10)"],
    ["an ERROR event with a 410 Status and no reason", { kind: "Status", code: 410, message: "gone" }, "GONE", "gone"],
    ["an ERROR event with a 500 Status", status(500, "InternalError", "boom"), "INTERNAL", "boom"],
  ])("throws %s as a typed error after the events before it", async (_name, obj, code, message) => {
    const seen: string[] = [];
    const bytes = ndjson([event("ADDED", "a"), { type: "ERROR", object: obj }, event("ADDED", "never")]);
    const err = await failure(
      (async () => {
        for await (const e of watchEvents(async () => Readable.from([bytes]), new AbortController().signal, ctx)) seen.push(e.type);
      })(),
    );
    expect([err.code, err.message, seen]).toEqual([code, message, ["ADDED"]]);
  });

  it.each([
    ["a stream cut inside an event", Buffer.from(`${JSON.stringify(event("ADDED", "a"))}\n{"type":"MODIFIED","obj`), /the stream ended in the middle of an event/],
    ["a line that is not JSON", Buffer.from("<html>proxy error</html>\n"), /the server sent a line that is not JSON/],
    ["an event of unknown type", Buffer.from('{"type":"RENAMED","object":{}}\n'), /without a known type and an object/],
  ])("throws a retryable IO_ERROR for %s", async (_name, bytes, message) => {
    const err = await failure(collect(bytes));
    expect([err.code, err.retryable]).toEqual(["IO_ERROR", true]);
    expect(err.message).toMatch(message);
  });
});

describe("watch over HTTP", () => {
  const servers: TestServer[] = [];
  const clients: RestClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  async function setup(handler: Handler, timeoutMs = 0) {
    const server = await startServer(handler);
    servers.push(server);
    const clock = new FakeClock();
    const client = createClient(restConfig({ server: server.url, timeoutMs }), { agents: new AgentPool(), clock, retry: { maxAttempts: 1 } });
    clients.push(client);
    const sa = client.resource({ group: "", version: "v1", plural: "serviceaccounts", namespaced: true });
    return { server, clock, sa };
  }

  it("sends the watch parameters and reads a chunked stream until the server ends it", async () => {
    const { server, sa } = await setup(async (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      const text = ndjson([event("ADDED", "a"), event("MODIFIED", "a"), { type: "BOOKMARK", object: { kind: "ServiceAccount", apiVersion: "v1", metadata: { resourceVersion: "9" } } }]).toString();
      for (let i = 0; i < text.length; i += 37) {
        res.write(text.slice(i, i + 37));
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
    const got: string[] = [];
    const signal = new AbortController().signal;
    for await (const e of sa.watch({ namespace: "team", resourceVersion: "5", allowWatchBookmarks: true, sendInitialEvents: true, timeoutSeconds: 30, labelSelector: "a=b", signal })) got.push(e.type);
    expect(got).toEqual(["ADDED", "MODIFIED", "BOOKMARK"]);
    expect(server.requests[0]!.url).toBe(
      "/api/v1/namespaces/team/serviceaccounts?watch=true&labelSelector=a%3Db&resourceVersion=5&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=30",
    );
  });

  it("throws GONE for a 410 ERROR event in the stream", async () => {
    const { sa } = await setup((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(ndjson([{ type: "ERROR", object: status(410, "Expired", "too old resource version") }]));
    });
    const err = await failure((async () => { for await (const _ of sa.watch({ resourceVersion: "1", signal: new AbortController().signal })); })());
    expect(err.code).toBe("GONE");
  });

  it("throws GONE when the server refuses the watch with 410", async () => {
    const { sa } = await setup((_req, res) => sendStatus(res, 410, "Expired", "resource version 1 is gone"));
    const err = await failure((async () => { for await (const _ of sa.watch({ resourceVersion: "1", signal: new AbortController().signal })); })());
    expect([err.code, err.message]).toEqual(["GONE", "resource version 1 is gone"]);
  });

  it.each([
    ["aborting the signal", true],
    ["leaving the loop", false],
  ])("ends cleanly and closes the socket on %s", async (_name, useAbort) => {
    let closed = false;
    const { sa } = await setup((_req, res, raw) => {
      raw.socket.on("close", () => (closed = true));
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(ndjson([event("ADDED", "a")]));
    });
    const abort = new AbortController();
    const got: string[] = [];
    for await (const e of sa.watch({ signal: abort.signal })) {
      got.push(e.type);
      if (useAbort) abort.abort();
      else break;
    }
    expect(got).toEqual(["ADDED"]);
    await until(() => closed);
    expect(closed).toBe(true);
  });

  it("ends cleanly when the signal aborts while waiting for the next event", async () => {
    const { sa, server } = await setup((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(ndjson([event("ADDED", "a")]));
    });
    const abort = new AbortController();
    const iterator = sa.watch({ signal: abort.signal })[Symbol.asyncIterator]();
    expect((await iterator.next()).value?.type).toBe("ADDED");
    const next = iterator.next();
    await until(() => server.requests.length === 1);
    abort.abort();
    expect(await next).toEqual({ done: true, value: undefined });
  });

  it("applies no request timeout to a watch", async () => {
    const { sa, clock } = await setup((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write(ndjson([event("ADDED", "a")]));
      setTimeout(() => res.end(ndjson([event("DELETED", "a")])), 20);
    }, 1000);
    const got: string[] = [];
    for await (const e of sa.watch({ signal: new AbortController().signal })) {
      got.push(e.type);
      clock.tick(60_000);
    }
    expect(got).toEqual(["ADDED", "DELETED"]);
    expect(clock.pendingTimers()).toBe(0);
  });
});



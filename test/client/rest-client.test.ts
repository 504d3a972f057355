// The REST client against real local servers: Status mapping, retries and backoff, warnings, timeouts, gzip.
import { getEventListeners } from "node:events";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AgentPool } from "../../src/client/transport.js";
import { createClient, type ClientOptions, type RestClient } from "../../src/client/rest-client.js";
import type { RestConfig } from "../../src/client/rest-config.js";
import { restConfig } from "./fixtures/config.js";
import { drive, RecordingClock } from "./fixtures/drive.js";
import { until } from "../fixtures/wait.js";
import { object, sendJson, sendStatus, startServer, type Handler, type TestServer } from "./fixtures/server.js";
import { failure } from "./fixtures/failure.js";

const servers: TestServer[] = [];
const clients: RestClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: Handler, port?: number): Promise<TestServer> {
  const s = await startServer(handler, { port });
  servers.push(s);
  return s;
}

function client(server: string, o: ClientOptions & { config?: Partial<RestConfig> } = {}) {
  const clock = new RecordingClock();
  const c = createClient(restConfig({ server, ...o.config }), { clock, agents: new AgentPool(), retry: { random: () => 0, baseDelayMs: 100 }, ...o });
  clients.push(c);
  return { clock, client: c };
}


describe("REST client: status mapping", () => {
  it.each([
    [404, "NotFound", "NOT_FOUND", false],
    [409, "AlreadyExists", "ALREADY_EXISTS", false],
    [409, "Conflict", "CONFLICT", false],
    [422, "Invalid", "INVALID", false],
    [410, "Expired", "GONE", false],
    [410, "Gone", "GONE", false],
    [401, "Unauthorized", "UNAUTHORIZED", false],
    [403, "Forbidden", "FORBIDDEN", false],
    [429, "TooManyRequests", "TOO_MANY_REQUESTS", true],
    [503, "ServiceUnavailable", "STORAGE_UNAVAILABLE", true],
    [500, "InternalError", "INTERNAL", true],
    [504, "Timeout", "TIMEOUT", true],
    [400, "BadRequest", "BAD_REQUEST", false],
    [415, "UnsupportedMediaType", "UNSUPPORTED_MEDIA_TYPE", false],
    [404, "", "NOT_FOUND", false],
    [409, "SomethingNew", "CONFLICT", false],
    [502, "", "INTERNAL", true],
    [418, "", "BAD_REQUEST", false],
  ])("maps a %i %j Status to %s (retryable %s)", async (code, reason, expected, retryable) => {
    const s = await serve((_req, res) => sendStatus(res, code, reason, `message for ${code}`, { name: "x", causes: [{ reason: "FieldValueInvalid", message: "bad", field: "spec.a" }] }));
    const { client: c } = client(s.url, { retry: { maxAttempts: 1 } });
    const err = await failure(c.request("GET", "/api/v1/things/x"));
    expect([err.code, err.httpStatus, err.retryable, err.message]).toEqual([expected, code, retryable, `message for ${code}`]);
    expect(err.causes).toEqual([{ reason: "FieldValueInvalid", message: "bad", field: "spec.a" }]);
    expect(err.details).toMatchObject({ name: "x" });
  });

  it("maps a response that is not a Status by its HTTP code and quotes the body", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(502, { "Content-Type": "text/plain" });
      res.end("upstream\nbroke");
    });
    const { client: c } = client(s.url, { retry: { maxAttempts: 1 } });
    const err = await failure(c.request("GET", "/version"));
    expect([err.code, err.retryable, err.message]).toEqual(["INTERNAL", true, "the server answered 502 to GET /version: upstream broke"]);
  });

  it("maps a body that is not JSON in a success to a clear error", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end("{not json");
    });
    const { client: c } = client(s.url);
    expect((await failure(c.request("GET", "/version"))).message).toMatch(/^the response to GET \/version is not valid JSON/);
  });
});

describe("REST client: retries", () => {
  it("honours Retry-After on 429 and then succeeds", async () => {
    let n = 0;
    const s = await serve((_req, res) => (n++ === 0 ? sendStatus(res, 429, "TooManyRequests", "slow down", undefined, { "Retry-After": "7" }) : sendJson(res, 200, object("a"))));
    const { client: c, clock } = client(s.url);
    const got = await drive(clock, c.request<{ metadata: { name: string } }>("GET", "/api/v1/namespaces/default/serviceaccounts/a"), 1000);
    expect(got.metadata.name).toBe("a");
    expect(s.requests).toHaveLength(2);
    expect(clock.delays).toEqual([7000]);
  });

  it("takes Retry-After from the Status details when the header is absent", async () => {
    let n = 0;
    const s = await serve((_req, res) => (n++ === 0 ? sendStatus(res, 504, "Timeout", "later", { retryAfterSeconds: 2 }) : sendJson(res, 200, {})));
    const { client: c, clock } = client(s.url);
    await drive(clock, c.request("GET", "/x"), 1000);
    expect(clock.delays).toEqual([2000]);
  });

  it("backs off exponentially with jitter on 503 and gives up after the attempt limit with a typed error", async () => {
    const s = await serve((_req, res) => sendStatus(res, 503, "ServiceUnavailable", "storage down"));
    const { client: c, clock } = client(s.url, { retry: { maxAttempts: 4, baseDelayMs: 100, random: () => 0.5 } });
    const err = await failure(drive(clock, c.request("GET", "/x"), 50));
    expect([err.code, err.retryable, err.message]).toEqual(["STORAGE_UNAVAILABLE", true, "storage down"]);
    expect(s.requests).toHaveLength(4);
    // equal jitter with random 0.5: three quarters of 100, 200, 400
    expect(clock.delays).toEqual([75, 150, 300]);
  });

  it("caps the backoff step at maxDelayMs", async () => {
    const s = await serve((_req, res) => sendStatus(res, 500, "InternalError", "boom"));
    const { client: c, clock } = client(s.url, { retry: { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 250, random: () => 1 } });
    await failure(drive(clock, c.request("GET", "/x"), 50));
    expect(clock.delays).toEqual([100, 200, 250, 250]);
  });

  it("retries a GET whose connection was reset", async () => {
    let n = 0;
    const s = await serve((_req, res, raw) => {
      if (n++ === 0) raw.socket.destroy();
      else sendJson(res, 200, { ok: true });
    });
    const { client: c, clock } = client(s.url);
    expect(await drive(clock, c.request("GET", "/x"))).toEqual({ ok: true });
    expect(s.requests).toHaveLength(2);
  });

  it.each([
    ["a POST on 503", "POST", undefined, 503],
    ["a POST on a reset connection", "POST", undefined, 0],
    ["a PATCH on 429", "PATCH", undefined, 429],
    ["a PUT without resourceVersion on 503", "PUT", undefined, 503],
  ])("does not retry %s", async (_name, method, _rv, code) => {
    const s = await serve((_req, res, raw) => {
      if (code === 0) raw.socket.destroy();
      else sendStatus(res, code, "", "no");
    });
    const { client: c, clock } = client(s.url);
    const err = await failure(drive(clock, c.request(method, "/x", { metadata: {} })));
    expect(s.requests).toHaveLength(1);
    expect(err.code).toBe(code === 0 ? "IO_ERROR" : code === 503 ? "STORAGE_UNAVAILABLE" : "TOO_MANY_REQUESTS");
    expect(clock.delays).toEqual([]);
  });

  it.each([
    ["GET", 2],
    ["POST", 1],
  ])("fails a %s whose response body stops short (connection closed mid-body) as IO_ERROR, retrying only what may repeat", async (method, attempts) => {
    const s = await serve((_req, res, raw) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial": tr', () => raw.socket.destroy());
    });
    const { client: c, clock } = client(s.url, { retry: { maxAttempts: 2, random: () => 0, baseDelayMs: 100 } });
    const err = await failure(drive(clock, c.request(method, "/x", method === "POST" ? { metadata: {} } : undefined)));
    expect(err.code).toBe("IO_ERROR");
    expect(s.requests).toHaveLength(attempts);
  });

  it("retries a PUT that carries a resourceVersion", async () => {
    let n = 0;
    const s = await serve((_req, res) => (n++ === 0 ? sendStatus(res, 503, "ServiceUnavailable", "x") : sendJson(res, 200, object("a"))));
    const { client: c, clock } = client(s.url);
    const r = c.resource({ group: "", version: "v1", plural: "serviceaccounts", namespaced: true });
    await drive(clock, r.update(object("a") as never));
    expect(s.requests.map((q) => q.method)).toEqual(["PUT", "PUT"]);
  });

  it("retries a POST whose connection was refused, since nothing was sent", async () => {
    const probe = await serve((_req, res) => sendJson(res, 200, {}));
    const port = probe.port;
    await servers.pop()!.close();
    const { client: c, clock } = client(`http://127.0.0.1:${port}`);
    const pending = c.request("POST", "/apis/g/v1/things", { a: 1 });
    await until(() => clock.pendingTimers() > 0);
    const s = await serve((req, res) => sendJson(res, 201, JSON.parse(req.body)), port);
    clock.tick(60_000);
    expect(await pending).toEqual({ a: 1 });
    expect(s.requests).toHaveLength(1);
  });

  it("gives up on a refused connection after the attempt limit with a retryable IO_ERROR", async () => {
    const probe = await serve(() => undefined);
    const url = probe.url;
    await servers.pop()!.close();
    const { client: c, clock } = client(url, { retry: { maxAttempts: 3, baseDelayMs: 10, random: () => 0 } });
    const err = await failure(drive(clock, c.request("GET", "/x")));
    expect([err.code, err.retryable, err.details.connectionError]).toEqual(["IO_ERROR", true, "ECONNREFUSED"]);
    expect(err.message).toBe(`GET ${url}/x failed: connection refused (ECONNREFUSED)`);
    expect(clock.delays).toEqual([5, 10]);
  });
});

describe("REST client: requests", () => {
  it("sends each Warning header text to onWarning", async () => {
    const s = await serve((_req, res) => sendJson(res, 200, {}, { Warning: ['299 - "v1beta1 is deprecated"', '299 - "field \\"x\\" is ignored, use y"'] }));
    const seen: string[] = [];
    const { client: c } = client(s.url, { onWarning: (w, call) => seen.push(`${call.method} ${w}`) });
    await c.request("GET", "/apis/g/v1beta1/things");
    expect(seen).toEqual(["GET v1beta1 is deprecated", 'GET field "x" is ignored, use y']);
  });

  it("gives up on a request after the request timeout with TIMEOUT and does not retry it", async () => {
    const s = await serve(() => undefined);
    const { client: c, clock } = client(s.url, { config: { timeoutMs: 1500 } });
    const pending = failure(c.request("GET", "/slow"));
    await until(() => s.requests.length === 1);
    clock.tick(1499);
    await new Promise((r) => setTimeout(r, 5));
    expect(s.requests).toHaveLength(1);
    clock.tick(1);
    const err = await pending;
    expect([err.code, err.message]).toEqual(["TIMEOUT", "GET /slow did not complete within 1500 ms (request timeout)"]);
    expect(s.requests).toHaveLength(1);
  });

  it("rejects with the caller's abort reason", async () => {
    const s = await serve(() => undefined);
    const { client: c } = client(s.url);
    const abort = new AbortController();
    const pending = c.request("GET", "/hang", undefined, { signal: abort.signal });
    await until(() => s.requests.length === 1);
    abort.abort(new Error("caller gave up"));
    await expect(pending).rejects.toThrow("caller gave up");
  });

  it("with a request timeout too, rejects with the caller's abort reason and leaves no listener on the caller's signal", async () => {
    const s = await serve((req, res) => (req.url === "/hang" ? undefined : sendJson(res, 200, {})));
    const { client: c, clock } = client(s.url, { config: { timeoutMs: 30_000 } });
    const abort = new AbortController();
    await c.request("GET", "/quick", undefined, { signal: abort.signal });
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(0);
    const pending = c.request("GET", "/hang", undefined, { signal: abort.signal });
    await until(() => s.requests.length === 2);
    abort.abort(new Error("caller gave up"));
    await expect(pending).rejects.toThrow("caller gave up");
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(0);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("combines the caller's signal and the timeout without AbortSignal.any", async () => {
    // On Node 20 each signal AbortSignal.any makes leaves a WeakRef in its source signal's set of dependants that nothing
    // prunes: with a long-lived source (a controller's), ~70 bytes a request kept for good (300,000 calls: +20 MB of
    // heap after collections, event-loop turns between them).
    const any = vi.spyOn(AbortSignal, "any");
    const s = await serve((_req, res) => sendJson(res, 200, {}));
    const { client: c } = client(s.url, { config: { timeoutMs: 30_000 } });
    const longLived = new AbortController().signal;
    await Promise.all(Array.from({ length: 20 }, () => c.request("GET", "/x", undefined, { signal: longLived })));
    expect(any).not.toHaveBeenCalled();
    expect(getEventListeners(longLived, "abort")).toHaveLength(0);
    any.mockRestore();
  });

  it.each([
    ["asks for gzip and decodes it", false, "gzip"],
    ["asks for no compression with disableCompression", true, undefined],
  ])("%s", async (_name, disableCompression, expected) => {
    const big = { items: Array.from({ length: 500 }, (_, i) => object(`sa-${i}`)) };
    const s = await serve((req, res) => {
      const gzip = String(req.headers["accept-encoding"] ?? "").includes("gzip");
      res.writeHead(200, { "Content-Type": "application/json", ...(gzip ? { "Content-Encoding": "gzip" } : {}) });
      res.end(gzip ? gzipSync(JSON.stringify(big)) : JSON.stringify(big));
    });
    const { client: c } = client(s.url, { config: { disableCompression } });
    expect(await c.request("GET", "/api/v1/serviceaccounts")).toEqual(big);
    expect(s.requests[0]!.headers["accept-encoding"]).toBe(expected);
  });

  it("sends the user agent, Accept and JSON bodies, and keeps a server path prefix", async () => {
    const s = await serve((req, res) => sendJson(res, 201, JSON.parse(req.body)));
    const { client: c } = client(`${s.url}/prefix/`.replace(/\/$/, ""), { config: { userAgent: "tool/9" } });
    await c.request("POST", "/apis/authentication.platform.io/v1/selfsubjectreviews", { kind: "SelfSubjectReview" }, { query: { dryRun: "All", empty: "" } });
    const req = s.requests[0]!;
    expect([req.url, req.headers["user-agent"], req.headers.accept, req.headers["content-type"], req.body]).toEqual([
      "/prefix/apis/authentication.platform.io/v1/selfsubjectreviews?dryRun=All",
      "tool/9",
      "application/json",
      "application/json",
      '{"kind":"SelfSubjectReview"}',
    ]);
  });

  it("waits for the rate limiter before each request", async () => {
    const s = await serve((_req, res) => sendJson(res, 200, {}));
    const { client: c, clock } = client(s.url, { config: { qps: 1, burst: 2 } });
    const calls = [c.request("GET", "/a"), c.request("GET", "/b"), c.request("GET", "/c")];
    await Promise.all(calls.slice(0, 2));
    await new Promise((r) => setTimeout(r, 10));
    expect(s.requests).toHaveLength(2);
    clock.tick(1000);
    await calls[2];
    expect(s.requests).toHaveLength(3);
  });
});

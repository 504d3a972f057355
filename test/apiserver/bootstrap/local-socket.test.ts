// The co-located controllers' unix-domain socket and in-thread channel: the socket owner-only, both authenticated as
// the controller identity and refused (401 without the token, 403 beyond the controller role) exactly as a request on
// the TLS port would be; the channel's requests abandoned when their client aborts or its thread ends.
import { existsSync, statSync } from "node:fs";
import { createServer, request } from "node:http";
import { Worker, type MessagePort } from "node:worker_threads";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import { LOCAL_SOCKET_FILE, newLocalConnection } from "../../../src/apiserver/bootstrap/local-socket.js";
import { runSecureServer, type Component, type ComponentContext } from "../../../src/apiserver/bootstrap/run-server.js";
import { serveLocalChannels } from "../../../src/apiserver/bootstrap/local-channel.js";
import { BODY_LIMIT_BYTES } from "../../../src/apiserver/http/status.js";
import { ChannelTransport } from "../../../src/client/channel-transport.js";
import { createClient } from "../../../src/client/rest-client.js";
import { silentLogger } from "../../../src/logger.js";
import { tempDir } from "../../fixtures/temp-dir.js";

function call(socketPath: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; body: any }> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { ...headers, ...(data && { "Content-Type": "application/json", "Content-Length": String(data.length) }) } }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on("error", reject);
    req.end(data);
  });
}

const names = groupNames();
/** A write beyond the controller role: binding itself to cluster-admin. */
const ESCALATE = {
  apiVersion: `${names.rbac}/v1`,
  kind: "ClusterRoleBinding",
  metadata: { name: "escalate" },
  roleRef: { apiGroup: names.rbac, kind: "ClusterRole", name: "cluster-admin" },
  subjects: [{ kind: "User", apiGroup: names.rbac, name: "system:platform-ca:controller" }],
};

async function up(localConnection: boolean) {
  const dataDir = tempDir();
  const controller = new AbortController();
  let context: ComponentContext | undefined;
  const capture: Component = { name: "capture", start: async (ctx) => void (context = ctx) };
  let started!: () => void;
  const ready = new Promise<void>((resolve) => (started = resolve));
  const done = runSecureServer({ dataDir, listen: { host: "127.0.0.1", port: 0 }, logger: silentLogger(), signal: controller.signal, write: () => started(), banner: "up", components: [capture], localConnection });
  await Promise.race([ready, done]);
  return { dataDir, context: context!, stop: () => (controller.abort(), done) };
}

/** Runs `check` against a fresh server and stops it whatever happens; returns the data directory. */
async function withUp(localConnection: boolean, check: (context: ComponentContext, dataDir: string) => Promise<void>): Promise<string> {
  const server = await up(localConnection);
  try {
    await check(server.context, server.dataDir);
  } finally {
    await server.stop();
  }
  return server.dataDir;
}

describe("the local socket of up", () => {
  it("is owner-only and serves the controller identity given the token", async () => {
    const dataDir = await withUp(true, async ({ local }, dir) => {
      expect(local!.socketPath).toBe(join(dir, LOCAL_SOCKET_FILE));
      expect(statSync(local!.socketPath).mode & 0o777).toBe(0o600);
      const review = await call(local!.socketPath, "POST", `/apis/${names.authentication}/v1/selfsubjectreviews`, { Authorization: `Bearer ${local!.token}` }, {
        apiVersion: `${names.authentication}/v1`,
        kind: "SelfSubjectReview",
      });
      expect(review.status).toBe(201);
      expect(review.body.status.userInfo.username).toBe("system:platform-ca:controller");
      // The controllers' own client, over the socket.
      const client = createClient({ server: "http://localhost", socketPath: local!.socketPath, tls: {}, credentials: { type: "token", token: local!.token }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
      try {
        const csrs = await client.request<{ items: unknown[] }>("GET", `/apis/${names.certificates}/v1/certificatesigningrequests`);
        expect(csrs.items).toEqual([]);
      } finally {
        client.close();
      }
    });
    expect(existsSync(join(dataDir, LOCAL_SOCKET_FILE))).toBe(false);
  });

  it("refuses a connection without the token (401) or with a wrong one", async () => {
    await withUp(true, async ({ local }) => {
      const none = await call(local!.socketPath, "GET", "/api/v1/namespaces");
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
      const wrong = await call(local!.socketPath, "GET", "/api/v1/namespaces", { Authorization: `Bearer ${local!.token.slice(0, -1)}x` });
      expect(wrong.status).toBe(401);
    });
  });

  it("refuses a write the controller role does not allow (403), as RBAC does on the TLS port", async () => {
    await withUp(true, async ({ local }) => {
      const auth = { Authorization: `Bearer ${local!.token}` };
      const binding = await call(local!.socketPath, "POST", `/apis/${names.rbac}/v1/clusterrolebindings`, auth, ESCALATE);
      expect(binding.status).toBe(403);
      expect(binding.body).toMatchObject({ kind: "Status", reason: "Forbidden", code: 403 });
      expect(binding.body.message).toContain('User "system:platform-ca:controller" cannot create resource "clusterrolebindings"');
      const ns = await call(local!.socketPath, "DELETE", "/api/v1/namespaces/default", auth);
      expect(ns.status).toBe(403);
    });
  });

  it("draws a fresh token per run, and gives up on a data directory too long for a socket address", () => {
    const [a, b] = [newLocalConnection("/srv/data"), newLocalConnection("/srv/data")];
    expect(a!.connection.socketPath).toBe(`/srv/data/${LOCAL_SOCKET_FILE}`);
    expect(a!.connection.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a!.connection.token).not.toBe(b!.connection.token);
    expect(a!.credential).toMatchObject({ secret: a!.connection.token, user: { username: "system:platform-ca:controller", groups: [] } });
    expect(newLocalConnection(`/${"d".repeat(100)}`)).toBeUndefined();
  });

  it("is not served unless asked for", async () => {
    const dataDir = await withUp(false, async ({ local }) => expect(local).toBeUndefined());
    expect(existsSync(join(dataDir, LOCAL_SOCKET_FILE))).toBe(false);
  });
});

/** One request over a channel's client end, as the socket helper above: status and JSON body. */
async function channelCall(port: MessagePort, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; body: any }> {
  const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const res = await new ChannelTransport(port).request({ method, path, headers: { ...headers, ...(data && { "Content-Type": "application/json" }) }, ...(data && { body: data }) });
  const text = res.body.toString("utf8");
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe("the in-thread channel of up", () => {
  it("is offered with the socket, serves the controller identity given the token, and carries watches too", async () => {
    await withUp(true, async ({ local, openChannel }) => {
      const port = openChannel!();
      try {
        const review = await channelCall(port, "POST", `/apis/${names.authentication}/v1/selfsubjectreviews`, { Authorization: `Bearer ${local!.token}` }, {
          apiVersion: `${names.authentication}/v1`,
          kind: "SelfSubjectReview",
        });
        expect(review.status).toBe(201);
        expect(review.body.status.userInfo.username).toBe("system:platform-ca:controller");
        // The controllers' own client with the channel alone (no socket path: a request that left the channel would
        // go to port 80 and fail): whole-body requests and a watch.
        const client = createClient({ server: "http://localhost", channel: port, tls: {}, credentials: { type: "token", token: local!.token }, namespace: "default", qps: 0, burst: 1, userAgent: "test" });
        try {
          // A watch streams over the channel: the namespaces there are arrive on it as ADDED events.
          const abort = new AbortController();
          const stream = await client.openStream("/api/v1/namespaces?watch=1", { signal: abort.signal });
          let text = "";
          stream.on("data", (chunk: string) => (text += chunk));
          await vi.waitFor(() => expect(text).toContain("\n"));
          expect(JSON.parse(text.split("\n")[0]!)).toMatchObject({ type: "ADDED", object: { kind: "Namespace" } });
          // A namespace's Event is a write the controller role allows.
          const event = await client.request<{ metadata: { name: string }; message: string }>("POST", "/api/v1/namespaces/default/events", {
            apiVersion: "v1",
            kind: "Event",
            metadata: { generateName: "probe-" },
            involvedObject: { kind: "Namespace", name: "default" },
            reason: "Probe",
            message: "over the channel",
            type: "Normal",
          });
          expect(event).toMatchObject({ metadata: { name: expect.stringMatching(/^probe-/) }, message: "over the channel" });
          abort.abort();
        } finally {
          client.close();
        }
      } finally {
        port.close();
      }
    });
  });

  it("refuses a request without the token (401) and a write beyond the controller role (403), as on the TLS port", async () => {
    await withUp(true, async ({ local, openChannel }) => {
      const port = openChannel!();
      try {
        const none = await channelCall(port, "GET", "/api/v1/namespaces");
        expect(none.status).toBe(401);
        expect(none.body).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
        const auth = { Authorization: `Bearer ${local!.token}` };
        expect((await channelCall(port, "GET", "/api/v1/namespaces", auth)).status).toBe(200);
        const binding = await channelCall(port, "POST", `/apis/${names.rbac}/v1/clusterrolebindings`, auth, ESCALATE);
        expect(binding.status).toBe(403);
        expect(binding.body.message).toContain('User "system:platform-ca:controller" cannot create resource "clusterrolebindings"');
        expect((await channelCall(port, "DELETE", "/api/v1/namespaces/default", auth)).status).toBe(403);
        // A body over the server's limit is refused as on the socket, before anything is stored.
        const large = await channelCall(port, "POST", "/api/v1/namespaces/default/events", auth, { apiVersion: "v1", kind: "Event", message: "x".repeat(BODY_LIMIT_BYTES) });
        expect(large.status).toBe(413);
        expect(large.body).toMatchObject({ kind: "Status", reason: "RequestEntityTooLarge", code: 413 });
      } finally {
        port.close();
      }
    });
  });

  it("abandons a request whose client aborts or whose thread ends, and fails requests once the server closes it", async () => {
    const server = createServer();
    const seen: string[] = [];
    const answers = [Buffer.alloc(5000, "b"), Buffer.concat([Buffer.from("po"), Buffer.from("ol")])];
    // Answers /fast at once; holds /slow until its client goes.
    server.on("request", (req, res) => {
      if (req.url === "/fast") return void res.end(`hello ${req.headers["x-n"]}`);
      // Bytes the server goes on holding: a buffer of its own (5 KB) and a small one from node's shared pool.
      if (req.url === "/bytes") return void res.end(answers[Number(req.headers["x-n"])]);
      // A server that gives up after the head (an error mid-answer): the client hears a reset connection.
      if (req.url === "/broken") return void res.writeHead(200).destroy(new Error("failed mid-answer"));
      seen.push(`held ${req.url}`);
      req.once("close", () => seen.push(`client gone ${req.url}`));
      res.once("close", () => seen.push(`response closed ${req.url}`));
    });
    const channels = serveLocalChannels(server, silentLogger());
    const port = channels.open();
    const client = new ChannelTransport(port);
    expect((await client.request({ method: "GET", path: "/fast", headers: { "X-N": "1" } })).body.toString()).toBe("hello 1");
    for (const [n, expected] of [[0, "b".repeat(5000)], [1, "pool"]] as const) {
      expect((await client.request({ method: "GET", path: "/bytes", headers: { "X-N": String(n) } })).body.toString()).toBe(expected);
      // Handed over as a copy: the server's buffer is neither detached nor changed.
      expect(answers[n]!.toString()).toBe(expected);
    }
    await expect(client.request({ method: "GET", path: "/broken", headers: {} })).rejects.toMatchObject({ code: "ECONNRESET", message: expect.stringContaining("without an answer") });
    expect(channels.inFlight).toBe(0);

    const abort = new AbortController();
    const slow = client.request({ method: "GET", path: "/slow", headers: {}, signal: abort.signal });
    await vi.waitFor(() => expect(channels.inFlight).toBe(1));
    abort.abort(new Error("not waiting any more"));
    await expect(slow).rejects.toThrow("not waiting any more");
    await vi.waitFor(() => expect(channels.inFlight).toBe(0));
    expect(seen).toEqual(["held /slow", "client gone /slow", "response closed /slow"]);

    // A thread that sends a request and is ended: the server abandons it as a dropped connection.
    const threadPort = channels.open();
    const worker = new Worker(
      `const { workerData, parentPort } = require("node:worker_threads");
       workerData.port.postMessage({ id: 1, method: "GET", path: "/slow-thread", headers: {} });
       parentPort.postMessage("sent"); setInterval(() => {}, 1000);`,
      { eval: true, workerData: { port: threadPort }, transferList: [threadPort] },
    );
    await new Promise((resolve) => worker.once("message", resolve));
    await vi.waitFor(() => expect(channels.inFlight).toBe(1));
    await worker.terminate();
    await vi.waitFor(() => expect(channels.inFlight).toBe(0));
    expect(seen.slice(3)).toEqual(["held /slow-thread", "client gone /slow-thread", "response closed /slow-thread"]);

    const pending = client.request({ method: "GET", path: "/slow-closing", headers: {} });
    await vi.waitFor(() => expect(channels.inFlight).toBe(1));
    channels.close();
    await expect(pending).rejects.toMatchObject({ code: "ECONNRESET" });
    await vi.waitFor(() => expect(channels.inFlight).toBe(0));
    await expect(client.request({ method: "GET", path: "/fast", headers: {} })).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(() => channels.open()).toThrow(/closed/);
  });
});

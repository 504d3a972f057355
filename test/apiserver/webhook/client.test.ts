// The webhook client against real HTTPS receivers: client config file → TLS (CA, client certificate) and token,
// retry with backoff on 5xx and refused connections, the per-attempt timeout, the injected dialer, bad config files.
import net from "node:net";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadWebhookConfig, WebhookClient, type WebhookClientOptions } from "../../../src/apiserver/webhook/client.js";
import type { PlatformError } from "../../../src/errors.js";
import { createTestPki, type TestPki } from "../../client/fixtures/pki.js";
import { sendJson, startServer, type TestServer } from "../../client/fixtures/server.js";
import { tempDir } from "../../fixtures/temp-dir.js";

let pki: TestPki;
let mtls: TestServer;
let dir: string;

/** A client config file (kubeconfig format) naming `server` with the given cluster and user fields. */
function configFile(name: string, server: string, cluster: Record<string, unknown>, user: Record<string, unknown>): string {
  const path = join(dir, name);
  writeFileSync(path, stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "receiver", cluster: { server, ...cluster } }],
    users: [{ name: "apiserver", user }],
    contexts: [{ name: "webhook", context: { cluster: "receiver", user: "apiserver" } }],
    "current-context": "webhook",
  }));
  return path;
}

const clients: WebhookClient[] = [];
async function client(path: string, extra: Partial<WebhookClientOptions> = {}): Promise<WebhookClient> {
  const c = new WebhookClient({ config: await loadWebhookConfig(path, "test webhook config"), retry: { initialBackoffMs: 10 }, ...extra });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  pki = createTestPki();
  dir = tempDir();
  mtls = await startServer((req, res) => sendJson(res, 200, { cn: req.clientCn ?? null }), { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true } });
});
afterAll(async () => {
  for (const c of clients) c.close();
  await mtls.close();
  pki.remove();
});

describe("webhook client", () => {
  it("POSTs JSON over mutual TLS with the file's CA (a path relative to the file) and client certificate", async () => {
    writeFileSync(join(dir, "ca.crt"), pki.ca);
    const path = configFile("mtls.yaml", `${mtls.url}/audit`, { "certificate-authority": "ca.crt" }, { "client-certificate": pki.client.certPath, "client-key": pki.client.keyPath });
    const res = await (await client(path)).post('{"kind":"EventList"}');
    expect(JSON.parse(res.body.toString())).toEqual({ cn: "alice" });
    const seen = mtls.requests.at(-1)!;
    expect([seen.method, seen.url, seen.headers["content-type"], seen.body]).toEqual(["POST", "/audit", "application/json", '{"kind":"EventList"}']);
  });

  it("sends the token as a bearer token, with certificate-authority-data", async () => {
    const server = await startServer((_req, res) => sendJson(res, 200, {}), { tls: { cert: pki.server.cert, key: pki.server.key } });
    try {
      const path = configFile("token.yaml", server.url, { "certificate-authority-data": Buffer.from(pki.ca).toString("base64") }, { token: "receiver-token" });
      await (await client(path)).post("{}");
      expect(server.requests[0]!.headers.authorization).toBe("Bearer receiver-token");
    } finally {
      await server.close();
    }
  });

  it("refuses a receiver whose certificate the configured CA did not issue, without retrying", async () => {
    const path = configFile("stranger.yaml", mtls.url, { "certificate-authority-data": Buffer.from(pki.strangerCa).toString("base64") }, {});
    const before = mtls.requests.length;
    const err = (await (await client(path)).post("{}").catch((e: unknown) => e)) as PlatformError;
    expect(err.code).toBe("TLS_VERIFY_FAILED");
    expect(mtls.requests.length).toBe(before);
  });

  it("retries a 500 with backoff, and gives up after 5 attempts with the receiver's answer", async () => {
    let calls = 0;
    const server = await startServer((_req, res) => sendJson(res, ++calls < 3 ? 503 : 200, { calls }), {});
    try {
      const c = await client(configFile("flaky.yaml", server.url, {}, {}));
      const started = performance.now();
      expect(JSON.parse((await c.post("{}")).body.toString())).toEqual({ calls: 3 });
      // Two waits: 10 ms, then 15 ms (each up to 20% longer).
      expect(performance.now() - started).toBeGreaterThanOrEqual(24);
      server.handler = (_req, res) => sendJson(res, 500, { message: "down" });
      calls = 0;
      const before = server.requests.length;
      const err = (await c.post("{}").catch((e: unknown) => e)) as PlatformError;
      expect(err.message).toMatch(/answered 500: \{"message":"down"\}/);
      expect(server.requests.length - before).toBe(5);
    } finally {
      await server.close();
    }
  });

  it("does not retry a 400 (the receiver refused the body)", async () => {
    const server = await startServer((_req, res) => sendJson(res, 400, {}), {});
    try {
      const err = (await (await client(configFile("bad.yaml", server.url, {}, {}))).post("{}").catch((e: unknown) => e)) as PlatformError;
      expect(err.details.httpStatus).toBe(400);
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("ends an attempt that gets no answer within the timeout", async () => {
    const server = await startServer(() => undefined, {});
    try {
      const c = await client(configFile("silent.yaml", server.url, {}, {}), { timeoutMs: 100, retry: { initialBackoffMs: 1, attempts: 2 } });
      const err = (await c.post("{}").catch((e: unknown) => e)) as PlatformError;
      expect(err.message).toMatch(/no answer within 100 ms/);
      expect(server.requests).toHaveLength(2);
    } finally {
      await server.close();
    }
  });

  it("connects through the injected dialer (TLS on top of the connection it returns)", async () => {
    const dialed: string[] = [];
    const dial = async (t: { host: string; port: number }) => {
      dialed.push(`${t.host}:${t.port}`);
      return net.connect(mtls.port, "127.0.0.1");
    };
    // The address in the file does not exist: only the dialer knows where the receiver is.
    const path = configFile("dialed.yaml", "https://localhost:1/events", { "certificate-authority-data": Buffer.from(pki.ca).toString("base64") }, { "client-certificate-data": Buffer.from(pki.client.cert).toString("base64"), "client-key-data": Buffer.from(pki.client.key).toString("base64") });
    const res = await (await client(path, { dial })).post("{}");
    expect(JSON.parse(res.body.toString())).toEqual({ cn: "alice" });
    expect(dialed).toEqual(["localhost:1"]);
  });

  it.each([
    ["a missing file", () => join(dir, "missing.yaml"), /^invalid test webhook config .*missing\.yaml: client config .* does not exist/],
    ["no server", () => configFile("noserver.yaml", "", {}, {}), /^invalid test webhook config .*noserver\.yaml: no API server address/],
    ["a client certificate without its key", () => configFile("nokey.yaml", "https://127.0.0.1:1", {}, { "client-certificate": pki.client.certPath }), /users\[0\]\.user\.client-key/],
    ["an exec plugin", () => configFile("exec.yaml", "https://127.0.0.1:1", {}, { exec: { apiVersion: "client.authentication.platform.io/v1", command: "x" } }), /an exec credential plugin is not offered for webhooks/],
  ])("refuses %s with a message naming the file", async (_name, path, message) => {
    await expect(loadWebhookConfig(path(), "test webhook config")).rejects.toThrow(message);
  });
});

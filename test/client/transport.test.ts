// TLS verification, mutual TLS, impersonation headers, shared keep-alive agents and the CONNECT proxy tunnel.
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient, type RestClient } from "../../src/client/rest-client.js";
import type { RestConfig, TlsConfig } from "../../src/client/rest-config.js";
import { AgentPool, extraHeaderName } from "../../src/client/transport.js";
import { restConfig } from "./fixtures/config.js";
import { createTestPki, type TestPki } from "./fixtures/pki.js";
import { sendJson, startServer, type TestServer } from "./fixtures/server.js";
import { failure } from "./fixtures/failure.js";

let pki: TestPki;
let server: TestServer;
let mtls: TestServer;
const clients: RestClient[] = [];

beforeAll(async () => {
  pki = createTestPki();
  const echo = (req: { clientCn?: string; url: string }, res: http.ServerResponse) => sendJson(res, 200, { cn: req.clientCn ?? null, url: req.url });
  server = await startServer((req, res) => echo(req, res), { tls: { cert: pki.server.cert + pki.ca, key: pki.server.key } });
  mtls = await startServer((req, res) => echo(req, res), { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true } });
});
afterAll(async () => {
  await Promise.all([server.close(), mtls.close()]);
  pki.remove();
});
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

function client(url: string, tls: TlsConfig, extra: Partial<RestConfig> = {}, pool = new AgentPool()) {
  const c = createClient(restConfig({ server: url, tls, ...extra }), { agents: pool, retry: { maxAttempts: 1 } });
  clients.push(c);
  return c;
}


describe("transport: TLS", () => {
  it.each<[string, () => TlsConfig, () => string]>([
    ["verifies the server against the configured CA", () => ({ ca: pki.ca }), () => server.url],
    ["checks the certificate against tls-server-name instead of the address", () => ({ ca: pki.ca, serverName: "api.test" }), () => server.url],
    ["reaches the server by a host name in its certificate", () => ({ ca: pki.ca }), () => `https://localhost:${server.port}`],
    ["skips verification with insecure-skip-tls-verify", () => ({ insecureSkipVerify: true }), () => server.url],
  ])("%s", async (_name, tls, url) => {
    expect(await client(url(), tls()).request("GET", "/version")).toEqual({ cn: null, url: "/version" });
  });

  it.each<[string, () => TlsConfig, RegExp]>([
    ["a CA that did not issue the server certificate", () => ({ ca: pki.strangerCa }), /cannot verify the certificate of https:\/\/127\.0\.0\.1:\d+: .* \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\); check the certificate authority/],
    ["no CA at all (system roots only)", () => ({}), /cannot verify the certificate of .* \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/],
    ["a tls-server-name the certificate does not carry", () => ({ ca: pki.ca, serverName: "other.test" }), /\(ERR_TLS_CERT_ALTNAME_INVALID\); check .*--tls-server-name/],
  ])("refuses %s with TLS_VERIFY_FAILED", async (_name, tls, message) => {
    const err = await failure(client(server.url, tls()).request("GET", "/version"));
    expect([err.code, err.retryable]).toEqual(["TLS_VERIFY_FAILED", false]);
    expect(err.message).toMatch(message);
  });

  it("presents the client certificate to a server that requires one (mutual TLS)", async () => {
    const c = client(mtls.url, { ca: pki.ca, cert: pki.client.cert, key: pki.client.key });
    expect(await c.request("GET", "/whoami")).toEqual({ cn: "alice", url: "/whoami" });
  });

  it.each<[string, () => TlsConfig]>([
    ["without a client certificate", () => ({ ca: pki.ca })],
    ["with a certificate from a CA the server does not trust", () => ({ ca: pki.ca, cert: pki.strangerClient.cert, key: pki.strangerClient.key })],
  ])("fails clearly against a mutual-TLS server %s", async (_name, tls) => {
    const err = await failure(client(mtls.url, tls()).request("GET", "/whoami"));
    expect(mtls.requests.filter((r) => r.url === "/whoami" && r.clientCn === undefined)).toEqual([]);
    // TLS 1.3 reports the refusal as an alert, or as a reset when the alert loses the race.
    expect(["TLS_VERIFY_FAILED", "IO_ERROR"]).toContain(err.code);
    expect(err.message).toMatch(/refused the client certificate \(TLS alert: certificate required\); check client-certificate|ECONNRESET/);
  });
});

describe("transport: headers and connections", () => {
  it("sends impersonation headers, one Impersonate-Group line per group", async () => {
    const plain = await startServer((_req, res) => sendJson(res, 200, {}));
    try {
      const c = client(plain.url, {}, { impersonate: { user: "system:serviceaccount:ns:robot", groups: ["devs", "ops"], uid: "u-1", extra: { scopes: ["a", "b"], "acme.com/project": ["x"] } } });
      await c.request("GET", "/x");
      const raw = plain.requests[0]!.rawHeaders;
      const pairs = raw.flatMap((v, i) => (i % 2 === 0 ? [[v.toLowerCase(), raw[i + 1]!]] : []));
      expect(pairs.filter(([k]) => k!.startsWith("impersonate-"))).toEqual([
        ["impersonate-user", "system:serviceaccount:ns:robot"],
        ["impersonate-group", "devs"],
        ["impersonate-group", "ops"],
        ["impersonate-uid", "u-1"],
        ["impersonate-extra-scopes", "a"],
        ["impersonate-extra-scopes", "b"],
        ["impersonate-extra-acme.com%2fproject", "x"],
      ]);
    } finally {
      await plain.close();
    }
  });

  it.each([
    ["scopes", "Impersonate-Extra-scopes"],
    ["acme.com/project", "Impersonate-Extra-acme.com%2Fproject"],
    ["50%", "Impersonate-Extra-50%25"],
    ["ünï", "Impersonate-Extra-%C3%BCn%C3%AF"],
  ])("escapes the extra key %j as %s", (key, header) => {
    expect(extraHeaderName(key)).toBe(header);
  });

  it("shares one keep-alive agent between clients of the same server and identity", async () => {
    const pool = new AgentPool();
    const a = client(mtls.url, { ca: pki.ca, cert: pki.client.cert, key: pki.client.key }, {}, pool);
    const b = client(mtls.url, { ca: pki.ca, cert: pki.client.cert, key: pki.client.key }, {}, pool);
    await Promise.all([a.request("GET", "/1"), b.request("GET", "/2")]);
    expect(pool.size).toBe(1);
    const other = client(server.url, { ca: pki.ca }, {}, pool);
    await other.request("GET", "/3");
    expect(pool.size).toBe(2);
    a.close();
    expect(pool.size).toBe(2);
    b.close();
    other.close();
    expect(pool.size).toBe(0);
  });

  it("reuses one connection for sequential requests", async () => {
    const sockets = new Set<unknown>();
    const plain = await startServer((_req, res, raw) => {
      sockets.add(raw.socket);
      sendJson(res, 200, {});
    });
    try {
      const c = client(plain.url, {});
      for (let i = 0; i < 5; i++) await c.request("GET", `/${i}`);
      expect(sockets.size).toBe(1);
    } finally {
      await plain.close();
    }
  });

  it("keeps the connections of a burst for the next one: no new TLS handshakes", async () => {
    const sockets = new Set<unknown>();
    const slow = await startServer(
      (_req, res, raw) => {
        sockets.add(raw.socket);
        setTimeout(() => sendJson(res, 200, {}), 20);
      },
      { tls: { cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requireClientCert: true } },
    );
    try {
      const c = client(slow.url, { ca: pki.ca, cert: pki.client.cert, key: pki.client.key });
      const burst = () => Promise.all(Array.from({ length: 64 }, (_, i) => c.request("GET", `/${i}`)));
      await burst();
      const afterFirst = sockets.size;
      expect(afterFirst).toBeGreaterThan(32); // a burst of 64 slow requests runs on many connections
      await burst();
      expect(sockets.size).toBe(afterFirst);
    } finally {
      await slow.close();
    }
  });

  it("tunnels through an HTTP proxy with CONNECT for an https server", async () => {
    const seen: string[] = [];
    const proxy = http.createServer((_req, res) => res.writeHead(405).end());
    const tunnels = new Set<net.Socket>();
    proxy.on("connect", (req, socket: net.Socket) => {
      seen.push(req.url ?? "");
      tunnels.add(socket);
      const [host, port] = (req.url ?? "").split(":");
      const upstream = net.connect(Number(port), host, () => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.pipe(socket).pipe(upstream);
      });
      upstream.on("error", () => socket.destroy());
      socket.on("error", () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const c = client(`https://localhost:${server.port}`, { ca: pki.ca }, { proxyUrl });
      expect(await c.request("GET", "/through")).toEqual({ cn: null, url: "/through" });
      expect(seen).toEqual([`localhost:${server.port}`]);
    } finally {
      // Tunnelled sockets leave the server's bookkeeping: they are closed by hand.
      for (const socket of tunnels) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

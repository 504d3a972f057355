import { request as httpRequest, createServer as createHttpServer, type Agent as HttpAgent } from "node:http";
import { createServer as createHttpsServer, request as httpsRequest, type Agent as HttpsAgent } from "node:https";
import { connect, createServer, type AddressInfo, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { createEgressSelector, EgressSelector } from "../../../src/apiserver/egress/index.js";
import { parseEgressSelectorConfig } from "../../../src/config/egress-selector.js";
import { isPlatformError } from "../../../src/errors.js";
import { startConnectProxy, startTinyproxy, type TestProxy } from "../../fixtures/connect-proxy.js";
import { opensslCa, opensslIssue, type OpensslPair } from "../../fixtures/openssl.js";
import { tempDir } from "../../fixtures/temp-dir.js";

const dir = tempDir();
let ca: OpensslPair;
let targetPort: number;
let plainPort: number;
let echoPort: number;
const servers: Server[] = [];
const proxies: TestProxy[] = [];

const listen = (server: Server): Promise<number> => new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));

beforeAll(async () => {
  ca = opensslCa(dir, "ca");
  const serving = opensslIssue(dir, "ca", "target", "/CN=target", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  const https = createHttpsServer({ key: serving.key, cert: serving.cert }, (req, res) => res.end(`tls ${req.url}`));
  const http = createHttpServer((req, res) => res.end(`plain ${req.url}`));
  const echo = createServer((s) => s.pipe(s));
  servers.push(https, http, echo);
  [targetPort, plainPort, echoPort] = await Promise.all([listen(https), listen(http), listen(echo)]);
});

afterAll(async () => {
  for (const p of proxies) await p.close();
  for (const s of servers) await new Promise((r) => s.close(r));
});

async function proxy(start: () => Promise<TestProxy>): Promise<TestProxy> {
  const p = await start();
  proxies.push(p);
  return p;
}

function get(url: string, agent: HttpAgent | HttpsAgent): Promise<string> {
  const request = url.startsWith("https:") ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, ca: ca.cert }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d)).on("end", () => resolve(`${res.statusCode} ${body}`));
    });
    req.once("error", reject).end();
  });
}

const selector = (selections: unknown) => createEgressSelector(parseEgressSelectorConfig(stringify({ apiVersion: "apiserver.platform.io/v1beta1", kind: "EgressSelectorConfiguration", egressSelections: selections }), "egress.yaml").config);

describe("egress selection", () => {
  it("HTTPConnect over TCP goes through tinyproxy, for HTTPS and plain HTTP targets; Direct does not", async () => {
    const tiny = await proxy(startTinyproxy);
    const egress = await selector([
      { name: "controlplane", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: tiny.address } } } },
      { name: "etcd", connection: { proxyProtocol: "Direct" } },
    ]);
    const controlplane = egress.dialer("controlplane");
    expect(controlplane.description).toBe(`HTTPConnect ${tiny.address}`);
    expect(controlplane.direct).toBe(false);
    expect(await get(`https://127.0.0.1:${targetPort}/webhook`, controlplane.httpsAgent())).toBe("200 tls /webhook");
    expect(await get(`http://127.0.0.1:${plainPort}/plain`, controlplane.httpAgent())).toBe("200 plain /plain");
    expect(tiny.tunnels()).toEqual([`127.0.0.1:${targetPort}`, `127.0.0.1:${plainPort}`]);
    // Direct (configured, and unconfigured `cluster`) bypasses the proxy.
    expect(await get(`https://127.0.0.1:${targetPort}/direct`, egress.dialer("etcd").httpsAgent())).toBe("200 tls /direct");
    expect(await get(`https://127.0.0.1:${targetPort}/direct`, egress.dialer("cluster").httpsAgent())).toBe("200 tls /direct");
    expect(egress.dialer("cluster").description).toBe("Direct");
    expect(egress.dialer("cluster").direct).toBe(true);
    expect(tiny.tunnels()).toHaveLength(2);
  });

  it("HTTPConnect over a Unix socket, and a forwarding address for clients that dial by address", async () => {
    const socketPath = join(dir, "proxy.sock");
    const uds = await proxy(() => startConnectProxy({ socketPath }));
    const egress = await selector([{ name: "cluster", connection: { proxyProtocol: "HTTPConnect", transport: { uds: { udsName: socketPath } } } }]);
    const cluster = egress.dialer("cluster");
    expect(await get(`https://127.0.0.1:${targetPort}/uds`, cluster.httpsAgent())).toBe("200 tls /uds");
    const forward = await cluster.forward("127.0.0.1", echoPort);
    try {
      const [host, port] = forward.address.split(":");
      const echoed = await new Promise<string>((resolve, reject) => {
        const s = connect({ host: host!, port: Number(port) }, () => s.write("ping"));
        s.once("data", (d) => (s.destroy(), resolve(d.toString()))).once("error", reject);
      });
      expect(echoed).toBe("ping");
    } finally {
      await forward.close();
    }
    expect(uds.tunnels()).toEqual([`127.0.0.1:${targetPort}`, `127.0.0.1:${echoPort}`]);
  });

  it("HTTPConnect to an https:// proxy authenticates with tlsConfig's client certificate and checks the proxy against caBundle", async () => {
    const proxyCa = opensslCa(dir, "proxy-ca");
    const proxyCert = opensslIssue(dir, "proxy-ca", "proxy", "/CN=proxy", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
    const client = opensslIssue(dir, "proxy-ca", "apiserver", "/CN=apiserver", "extendedKeyUsage=clientAuth\n");
    const secure = await proxy(() => startConnectProxy({ tls: { key: proxyCert.key, cert: proxyCert.cert, ca: proxyCa.cert } }));
    const tcp = (caBundle: string) => [{ name: "controlplane", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: secure.address, tlsConfig: { caBundle, clientCert: client.certPath, clientKey: client.keyPath } } } } }];
    const egress = await selector(tcp(proxyCa.certPath));
    expect(await get(`https://127.0.0.1:${targetPort}/mtls`, egress.dialer("controlplane").httpsAgent())).toBe("200 tls /mtls");
    expect(secure.tunnels()).toEqual([`127.0.0.1:${targetPort}`]);
    // The proxy's certificate is not from the named bundle: no tunnel, an error naming the proxy and the target.
    const wrong = await selector(tcp(ca.certPath));
    const err = await wrong.dialer("controlplane").connect("127.0.0.1", targetPort).catch((e: unknown) => e);
    expect(isPlatformError(err, "IO_ERROR")).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^cannot reach 127\\.0\\.0\\.1:${targetPort} through the egress proxy: .*certificate`));
    expect(secure.tunnels()).toHaveLength(1);
  });

  it("a refused CONNECT or an unreachable proxy fails with the proxy's answer, never falling back to a direct connection", async () => {
    const refusing = await proxy(() => startConnectProxy({ deny: () => true }));
    const egress = await selector([
      { name: "controlplane", connection: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: refusing.address } } } },
      { name: "cluster", connection: { proxyProtocol: "HTTPConnect", transport: { uds: { udsName: join(dir, "nobody.sock") } } } },
    ]);
    await expect(get(`https://127.0.0.1:${targetPort}/`, egress.dialer("controlplane").httpsAgent())).rejects.toThrow(`cannot reach 127.0.0.1:${targetPort} through the egress proxy: proxy ${refusing.address} refused CONNECT to 127.0.0.1:${targetPort}: 403 Forbidden`);
    await expect(egress.dialer("cluster").connect("127.0.0.1", targetPort)).rejects.toThrow(/through the egress proxy: connect ENOENT .*nobody\.sock/);
  });

  it("without a configuration every selection dials directly", async () => {
    const egress = EgressSelector.direct();
    expect(await get(`https://127.0.0.1:${targetPort}/d`, egress.dialer("controlplane").httpsAgent())).toBe("200 tls /d");
    expect(() => egress.dialer("master" as "controlplane")).toThrow(/expected an egress selection name/);
  });
});

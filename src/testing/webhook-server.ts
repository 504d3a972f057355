// A webhook server for tests of webhook configurations: HTTPS on loopback with a certificate from a throw-away CA, a
// decide function, every request recorded, and switches to make it slow, down (connections reset) or malformed.
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { stringify } from "yaml";
import { DEFAULT_USAGES } from "../config/pki-manifest.js";
import { generateCa } from "../pki/ca.js";
import { mintLeaf } from "../pki/leaf.js";

/** The JSON answer to one request body (`undefined` answers 204 without a body). */
export type DecideFunction = (body: unknown, request: { readonly path: string; readonly headers: IncomingHttpHeaders }) => unknown;

/** How the server answers: normally, by resetting every connection, with broken JSON, or with an HTTP error status. */
export type WebhookBehaviour = "normal" | "down" | "malformed" | { readonly status: number };

export interface TestWebhookServerOptions {
  readonly decide: DecideFunction;
  /** Path of the webhook URL (default `/`); other paths answer 404. */
  readonly path?: string;
  /**
   * Answer on every path instead (several webhooks of one configuration, each at its own path, told apart by `path`
   * in `decide`); `url` is then the server's origin, without a path.
   */
  readonly anyPath?: boolean;
  /** Bearer token the server requires (401 otherwise), written into the client config. */
  readonly token?: string;
}

export interface RecordedWebhookRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: unknown;
}

export interface TestWebhookServer {
  /** `https://127.0.0.1:<port><path>` (without the path under `anyPath`). */
  readonly url: string;
  /** The CA certificate that signed the serving certificate (what a client must trust). */
  readonly caPem: string;
  /** Every request received, in order (also the ones answered down, slow or malformed). */
  readonly requests: RecordedWebhookRequest[];
  /** Milliseconds to wait before answering (default 0). */
  delayMs: number;
  behaviour: WebhookBehaviour;
  /** A client config file (kubeconfig YAML) that reaches this server: its URL, its CA and the token when one is set. */
  clientConfig(): string;
  close(): Promise<void>;
}

/** The answer to a review webhook request: the request's apiVersion and kind with `field` (status or response) set. */
export function reviewAnswer(review: unknown, field: string, value: unknown): Record<string, unknown> {
  const r = (review ?? {}) as Record<string, unknown>;
  return { apiVersion: r.apiVersion, kind: r.kind, [field]: value };
}

export async function startTestWebhookServer(options: TestWebhookServerOptions): Promise<TestWebhookServer> {
  // A CA of its own per server (P-256: milliseconds), so a test trusts exactly this server.
  const now = new Date();
  const { ca, certPem: caPem } = await generateCa({ commonName: "test webhook CA", keyType: "p256", lifetimeSeconds: 86_400, now });
  const pair = await mintLeaf({ commonName: "test-webhook", dns: ["localhost"], ip: ["127.0.0.1"], keyType: "p256", usages: DEFAULT_USAGES.server, lifetimeSeconds: 86_400, ca, now });
  const path = options.path ?? "/";
  const sockets = new Set<Socket>();
  const requests: RecordedWebhookRequest[] = [];
  const server = https.createServer({ key: pair.keyPem, cert: pair.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        body = Buffer.concat(chunks).toString("utf8");
      }
      const url = (req.url ?? "/").split("?")[0]!;
      requests.push({ path: url, headers: req.headers, body });
      const answer = async (): Promise<void> => {
        if (self.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, self.delayMs));
        if (res.destroyed) return;
        const b = self.behaviour;
        if (b === "down") return void req.socket.destroy();
        if (typeof b === "object") return void res.writeHead(b.status, { "Content-Type": "text/plain" }).end(`test webhook answers ${b.status}`);
        if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) return void res.writeHead(401).end("unauthorized");
        if (options.anyPath !== true && url !== path) return void res.writeHead(404).end("not found");
        if (b === "malformed") return void res.writeHead(200, { "Content-Type": "application/json" }).end('{"apiVersion": ');
        const out = await options.decide(body, { path: url, headers: req.headers });
        if (out === undefined) return void res.writeHead(204).end();
        res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify(out));
      };
      answer().catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" }).end(`decide failed: ${(err as Error).message}`);
      });
    });
  });
  server.on("connection", (s: Socket) => {
    if (self.behaviour === "down") return void s.destroy();
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}${options.anyPath === true ? "" : path}`;
  const self: TestWebhookServer = {
    url,
    caPem,
    requests,
    delayMs: 0,
    behaviour: "normal",
    clientConfig: () =>
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "webhook", cluster: { server: url, "certificate-authority-data": Buffer.from(caPem).toString("base64") } }],
        users: [{ name: "apiserver", user: options.token !== undefined ? { token: options.token } : {} }],
        contexts: [{ name: "webhook", context: { cluster: "webhook", user: "apiserver" } }],
        "current-context": "webhook",
      }),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return self;
}

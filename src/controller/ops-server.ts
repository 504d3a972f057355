// The controller manager's operations endpoint: /healthz, /readyz and Prometheus /metrics over plain HTTP.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { invalidOption, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { ControllerMetrics } from "./metrics.js";

/** One named check of /healthz or /readyz. */
export interface OpsCheck {
  readonly name: string;
  readonly ok: boolean;
  /** Why it failed, or a state worth showing (e.g. "standby, leader is replica-2"). */
  readonly detail?: string;
}

export interface OpsServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly metrics: ControllerMetrics;
  readonly health: () => readonly OpsCheck[];
  readonly ready: () => readonly OpsCheck[];
  readonly logger?: Logger;
}

export class OpsServer {
  private readonly o: OpsServerOptions;
  private readonly log: Logger;
  private server: Server | undefined;
  private bound = "";

  constructor(options: OpsServerOptions) {
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535) throw invalidOption("port", "to be an integer 0–65535", options.port);
    this.o = options;
    this.log = (options.logger ?? silentLogger()).child({ subsystem: "ops-server" });
  }

  /** `http://host:port` once listening. */
  get address(): string {
    return this.bound;
  }

  async start(): Promise<string> {
    if (this.server) return this.bound;
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    const host = this.o.host ?? "127.0.0.1";
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) =>
        reject(new PlatformError("IO_ERROR", `cannot listen on ${host}:${this.o.port} for health and metrics: ${err.code ?? err.message}`, { cause: err })),
      );
      server.listen(this.o.port, host, () => resolve());
    });
    const where = server.address() as AddressInfo;
    this.bound = `http://${where.address.includes(":") ? `[${where.address}]` : where.address}:${where.port}`;
    this.log.info({ address: this.bound }, "serving /healthz, /readyz and /metrics");
    return this.bound;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://ops");
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "text/plain; charset=utf-8", "method not allowed\n", { Allow: "GET, HEAD" });
    try {
      switch (url.pathname) {
        case "/healthz":
        case "/livez":
          return checks(res, "healthz", this.o.health(), url.searchParams.has("verbose"));
        case "/readyz":
          return checks(res, "readyz", this.o.ready(), url.searchParams.has("verbose"));
        case "/metrics": {
          const { contentType, body } = await this.o.metrics.scrape();
          return send(res, 200, contentType, body);
        }
        default:
          return send(res, 404, "text/plain; charset=utf-8", "not found\n");
      }
    } catch (err) {
      this.log.error({ err: err instanceof Error ? err.message : String(err), path: url.pathname }, "ops request failed");
      return send(res, 500, "text/plain; charset=utf-8", "internal error\n");
    }
  }
}

/** Upstream's shape: `ok`, or one `[+]name ok` / `[-]name failed: why` line per check and a last line saying it failed. */
function checks(res: ServerResponse, what: string, list: readonly OpsCheck[], verbose: boolean): void {
  const ok = list.every((c) => c.ok);
  const lines = list.map((c) => (c.ok ? `[+]${c.name} ok${c.detail ? ` (${c.detail})` : ""}` : `[-]${c.name} failed: ${c.detail ?? "not ready"}`));
  const body = ok && !verbose ? "ok\n" : `${lines.join("\n")}\n${ok ? `${what} check passed` : `${what} check failed`}\n`;
  send(res, ok ? 200 : 503, "text/plain; charset=utf-8", body);
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": contentType, "Content-Length": Buffer.byteLength(body), "X-Content-Type-Options": "nosniff", ...headers });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

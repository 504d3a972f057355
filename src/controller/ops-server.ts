// The controller manager's operations endpoint: /healthz, /readyz and Prometheus /metrics over HTTPS with delegated
// authentication and authorization (plain HTTP without either only when asked for).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import type { GroupNames } from "../api/group.js";
import { checkReport, healthReport, type CheckResult } from "../apiserver/http/health-report.js";
import { classify, statusOf } from "../apiserver/http/status.js";
import { invalidOption, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { readClientCaFile } from "../pki/client-ca-file.js";
import type { ResourceSource } from "./controllers/controller-set.js";
import type { CrlStore } from "./controllers/crl-publisher.js";
import type { ControllerMetrics } from "./metrics.js";
import { DelegatedOpsAuth } from "./ops-auth.js";
import { opsServingPair } from "./ops-tls.js";

/** One named check of /healthz or /readyz: why it failed, or a state worth showing (e.g. "standby, leader is replica-2"). */
export type OpsCheck = CheckResult;

/** Where and how the endpoint listens (upstream's --bind-address, --secure-port, --tls-*, --cert-dir, --client-ca-file). */
export interface OpsServing {
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Plain HTTP, with neither TLS nor authentication: only when asked for (a development setup). */
  readonly insecureHttp?: boolean;
  /** PEM serving certificate and key files; without them a self-signed pair is made (kept in `certDir` when set). */
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
  readonly certDir?: string;
  /** CA certificates (PEM file) client certificates are verified against; without it only bearer tokens authenticate. */
  readonly clientCaFile?: string;
  /** Paths served without authentication or authorization (default /healthz, /readyz, /livez). */
  readonly alwaysAllowPaths?: readonly string[];
}

export interface OpsServerOptions extends OpsServing {
  /** The API server that authenticates (TokenReview) and authorizes (SubjectAccessReview) requests; unused with insecureHttp. */
  readonly client?: ResourceSource;
  readonly names?: GroupNames;
  /** Time client certificates are checked at (default the system clock). */
  readonly clock?: { now(): number };
  readonly metrics: ControllerMetrics;
  readonly health: () => readonly OpsCheck[];
  readonly ready: () => readonly OpsCheck[];
  readonly logger?: Logger;
  /** The CRLs served at /crl/{signerName} (the CRL publisher's store; docs/revocation.md). */
  readonly crls?: CrlStore;
}

/** Where each signer's CRL is served: public, as the CRLs are public data that clients fetch without credentials. */
export const CRL_PATH_PREFIX = "/crl/";

export class OpsServer {
  private readonly o: OpsServerOptions;
  private readonly log: Logger;
  private server: Server | undefined;
  private auth: DelegatedOpsAuth | undefined;
  private bound = "";

  constructor(options: OpsServerOptions) {
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535) throw invalidOption("port", "to be an integer 0–65535", options.port);
    this.o = options;
    this.log = (options.logger ?? silentLogger()).child({ subsystem: "ops-server" });
  }

  /** `https://host:port` (or `http://` with insecureHttp) once listening. */
  get address(): string {
    return this.bound;
  }

  async start(): Promise<string> {
    if (this.server) return this.bound;
    const host = this.o.host ?? "127.0.0.1";
    const server = this.o.insecureHttp ? createServer((req, res) => void this.handle(req, res)) : await this.secureServer(host);
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err: NodeJS.ErrnoException) =>
        reject(new PlatformError("IO_ERROR", `cannot listen on ${host}:${this.o.port} for health and metrics: ${err.code ?? err.message}`, { cause: err })),
      );
      server.listen(this.o.port, host, () => resolve());
    });
    const where = server.address() as AddressInfo;
    this.bound = `${this.o.insecureHttp ? "http" : "https"}://${where.address.includes(":") ? `[${where.address}]` : where.address}:${where.port}`;
    if (this.o.insecureHttp) this.log.warn({ address: this.bound }, "serving /healthz, /readyz and /metrics over plain HTTP without authentication");
    else this.log.info({ address: this.bound }, "serving /healthz, /readyz and /metrics");
    return this.bound;
  }

  /** HTTPS whose requests outside the always-allowed paths are authenticated and authorized by the API server. */
  private async secureServer(host: string): Promise<Server> {
    if (!this.o.client || !this.o.names) throw invalidOption("client", "and `names` to be set for the secure ops endpoint (or `insecureHttp: true`)", this.o.client);
    const { certDir, tlsCertFile, tlsKeyFile, alwaysAllowPaths } = this.o;
    const clientCas = await readClientCaFile(this.o.clientCaFile);
    const pair = await opsServingPair({ host, logger: this.log, ...(certDir !== undefined && { certDir }), ...(tlsCertFile !== undefined && { certFile: tlsCertFile }), ...(tlsKeyFile !== undefined && { keyFile: tlsKeyFile }) });
    this.o.metrics.holdCertificates(() => [{ usage: "serving", name: "controller-manager", pem: pair.certPem }]);
    this.auth = new DelegatedOpsAuth({ client: this.o.client, names: this.o.names, clientCas, logger: this.log, ...(alwaysAllowPaths !== undefined && { alwaysAllowPaths }), ...(this.o.clock && { clock: this.o.clock }) });
    const server = createHttpsServer({ key: pair.keyPem, cert: pair.certPem, ...(clientCas.length > 0 && { ca: clientCas, requestCert: true }), rejectUnauthorized: false }, (req, res) => void this.handle(req, res));
    // A connection's client certificate is fixed at the handshake (authn-x509 reads it once per connection).
    server.on("secureConnection", (socket: TLSSocket) => socket.disableRenegotiation());
    this.log.info({ cert: pair.source, clientCertificates: clientCas.length > 0 }, "ops endpoint secured with delegated authentication and authorization");
    return server;
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
    if (url.pathname.startsWith(CRL_PATH_PREFIX)) return this.crl(res, url);
    try {
      await this.auth?.check(req, url.pathname);
    } catch (err) {
      const status = statusOf(classify(err).error);
      return send(res, status.code, "application/json", JSON.stringify(status));
    }
    try {
      const [, endpoint, name, extra] = url.pathname.split("/");
      if ((endpoint === "healthz" || endpoint === "livez" || endpoint === "readyz") && extra === undefined) {
        const list = endpoint === "readyz" ? this.o.ready() : this.o.health();
        const check = name === undefined ? undefined : list.find((c) => c.name === name);
        if (name !== undefined && !check) return send(res, 404, "text/plain; charset=utf-8", "not found\n");
        // The probe paths are open to anyone: their failures say only which check failed (its own path says why).
        const report = check
          ? checkReport(check)
          : healthReport(endpoint, list, { verbose: url.searchParams.has("verbose"), excluded: new Set(url.searchParams.getAll("exclude")), withhold: true });
        return send(res, report.code, "text/plain; charset=utf-8", report.body);
      }
      switch (url.pathname) {
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
  /** `/crl/{signerName}`: DER (`application/pkix-crl`), or PEM with `?format=pem`; 404 for a signer without one. */
  private crl(res: ServerResponse, url: URL): void {
    let signerName: string;
    try {
      signerName = decodeURIComponent(url.pathname.slice(CRL_PATH_PREFIX.length));
    } catch {
      return send(res, 400, "text/plain; charset=utf-8", "malformed signer name\n");
    }
    const crl = this.o.crls?.get(signerName);
    if (!crl) return send(res, 404, "text/plain; charset=utf-8", `no CRL for signer ${JSON.stringify(signerName)} (is this replica leading?)\n`);
    const headers = { Expires: crl.nextUpdate.toUTCString() };
    if (url.searchParams.get("format") === "pem") return send(res, 200, "application/x-pem-file", crl.pem, headers);
    res.writeHead(200, { "Content-Type": "application/pkix-crl", "Content-Length": crl.der.length, "X-Content-Type-Options": "nosniff", ...headers });
    res.end(res.req.method === "HEAD" ? undefined : Buffer.from(crl.der));
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "Content-Type": contentType, "Content-Length": Buffer.byteLength(body), "X-Content-Type-Options": "nosniff", ...headers });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

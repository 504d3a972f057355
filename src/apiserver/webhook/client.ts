// The client of the server's outbound webhooks (audit now; authentication, authorization and admission later): a
// client config file gives the URL, TLS and credentials; each POST has a timeout and is retried with backoff.
import http from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { PlatformError } from "../../errors.js";
import { loadClientConfig } from "../../client/config-file.js";
import { createCredentialSource, type CredentialSource } from "../../client/credentials.js";
import { resolveRestConfig } from "../../client/resolve-config.js";
import type { RestConfig } from "../../client/rest-config.js";
import { connectionError } from "../../client/status-errors.js";
import { systemClock, type Clock } from "../../time/clock.js";

/**
 * Opens the raw connection to `host:port` (TLS, when the URL is https, is set up on top of it by the client). The
 * egress selector supplies one that goes through its proxy; without it the client connects directly.
 */
export type Dialer = (target: { readonly host: string; readonly port: number }, signal?: AbortSignal) => Promise<Duplex>;

/** Upstream's GenericWebhook backoff: `initial`, then ×1.5 each time, each delay up to 20% longer, 5 attempts in all. */
export interface WebhookRetry {
  readonly initialBackoffMs: number;
  readonly factor?: number;
  readonly jitter?: number;
  readonly attempts?: number;
}

export interface WebhookClientOptions {
  /** Where and as whom: the resolved client config (see loadWebhookConfig). */
  readonly config: RestConfig;
  /** Limit of one attempt, connection to last byte of the answer (default 30 s, upstream's). */
  readonly timeoutMs?: number;
  readonly retry: WebhookRetry;
  /** Whether a failed attempt is tried again (default: connection failures, 429 and 5xx, as upstream's DefaultShouldRetry). */
  readonly shouldRetry?: (err: PlatformError) => boolean;
  readonly dial?: Dialer;
  readonly clock?: Clock;
  readonly random?: () => number;
}

export interface WebhookResponse {
  readonly status: number;
  readonly body: Buffer;
}

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 30_000;
/** Answers are read up to this size (a review is small; an audit receiver's answer is ignored). */
const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

/** Reads a webhook's client config file (kubeconfig format: its current context's cluster and user). */
export async function loadWebhookConfig(path: string, what: string, groupSuffix?: string): Promise<RestConfig> {
  try {
    const config = await resolveRestConfig(await loadClientConfig({ explicitPath: path }), {}, { groupSuffix });
    if (config.credentials.type === "exec") throw new PlatformError("CONFIG_INVALID", "an exec credential plugin is not offered for webhooks: use a token, a token file or a client certificate");
    return config;
  } catch (err) {
    const e = err as PlatformError;
    throw new PlatformError(e.code ?? "CONFIG_INVALID", `invalid ${what} ${path}: ${e.message}`, { cause: err, details: { file: path } });
  }
}

/** Upstream's DefaultShouldRetry: the connection failed, or the answer was 429 or 5xx. */
export function retryableWebhookError(err: PlatformError): boolean {
  const status = err.details.httpStatus;
  if (typeof status === "number") return status === 429 || status >= 500;
  return err.code === "IO_ERROR" || err.code === "TIMEOUT";
}

export class WebhookClient {
  readonly #o: WebhookClientOptions;
  readonly #url: URL;
  readonly #agent: http.Agent;
  readonly #credentials: CredentialSource;
  readonly #clock: Clock;

  constructor(options: WebhookClientOptions) {
    this.#o = options;
    this.#url = new URL(options.config.server);
    this.#clock = options.clock ?? systemClock;
    this.#credentials = createCredentialSource(options.config);
    this.#agent = agentFor(options.config, this.#url.protocol === "https:", options.dial);
  }

  get url(): string {
    return this.#url.href;
  }

  /** POSTs `body` (JSON) until an attempt succeeds (2xx) or retries run out; rejects with the last attempt's error. */
  async post(body: string, signal?: AbortSignal): Promise<WebhookResponse> {
    const r = this.#o.retry;
    const attempts = r.attempts ?? 5;
    let delay = r.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#attempt(body, signal);
      } catch (err) {
        const e = err as PlatformError;
        if (attempt >= attempts || signal?.aborted || !(this.#o.shouldRetry ?? retryableWebhookError)(e)) throw e;
        await this.#clock.sleep(delay * (1 + (r.jitter ?? 0.2) * (this.#o.random ?? Math.random)()), signal);
        if (signal?.aborted) throw e;
        delay *= r.factor ?? 1.5;
      }
    }
  }

  async #attempt(body: string, signal?: AbortSignal): Promise<WebhookResponse> {
    const auth = await this.#credentials.get(signal);
    const secure = this.#url.protocol === "https:";
    const ctx = { method: "POST", path: this.#url.pathname };
    const payload = Buffer.from(body);
    const timeoutMs = this.#o.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
    return new Promise<WebhookResponse>((resolve, reject) => {
      const request = (secure ? https : http).request({
        method: "POST",
        host: this.#url.hostname.replace(/^\[|\]$/g, ""),
        port: this.#url.port || (secure ? 443 : 80),
        path: `${this.#url.pathname}${this.#url.search}`,
        agent: this.#agent,
        headers: {
          "Content-Type": "application/json",
          Accept: "application/json",
          "Content-Length": String(payload.length),
          "User-Agent": this.#o.config.userAgent,
          ...(auth.authorization !== undefined && { Authorization: auth.authorization }),
        },
        ...(signal && { signal }),
      });
      const timer = this.#clock.setTimer(timeoutMs, () => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: "ETIMEDOUT" })));
      request.once("error", (err) => {
        timer();
        // The path is in ctx: the server named by its origin, or a URL with a path would show it twice.
        reject(connectionError(err, this.#url.origin, ctx));
      });
      request.once("response", (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size <= MAX_RESPONSE_BYTES) chunks.push(c);
        });
        res.once("end", () => {
          timer();
          const status = res.statusCode ?? 0;
          const answer = Buffer.concat(chunks);
          if (status >= 200 && status < 300) return resolve({ status, body: answer });
          reject(new PlatformError("IO_ERROR", `POST ${this.#o.config.server} answered ${status}: ${answer.toString("utf8", 0, Math.min(answer.length, 200)).trim()}`, {
            retryable: status === 429 || status >= 500,
            details: { httpStatus: status },
          }));
        });
      });
      request.end(payload);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** An agent with the config's TLS settings, one keep-alive pool, that connects through `dial` when given. */
function agentFor(config: RestConfig, secure: boolean, dial: Dialer | undefined): http.Agent {
  const options: https.AgentOptions = { keepAlive: true, maxSockets: 16 };
  if (secure) {
    Object.assign(options, {
      ...(config.tls.ca !== undefined && { ca: config.tls.ca }),
      ...(config.tls.cert !== undefined && { cert: config.tls.cert, key: config.tls.key }),
      rejectUnauthorized: config.tls.insecureSkipVerify !== true,
      ...(config.tls.serverName && { servername: config.tls.serverName }),
    });
  }
  if (!dial) return secure ? new https.Agent(options) : new http.Agent(options);
  type Callback = (err: Error | null, socket?: Duplex) => void;
  const connect = (o: https.RequestOptions, callback: Callback): void => {
    dial({ host: String(o.host), port: Number(o.port) }).then(
      (socket) => callback(null, secure ? tls.connect({ ...(o as tls.ConnectionOptions), socket }) : socket),
      (err: Error) => callback(err),
    );
  };
  // Node's agents accept an asynchronous createConnection: return nothing and call back with the socket.
  const Base = secure ? https.Agent : http.Agent;
  const agent = new Base(options);
  (agent as unknown as { createConnection: (o: https.RequestOptions, cb: Callback) => undefined }).createConnection = (o, cb) => {
    connect(o, cb);
    return undefined;
  };
  return agent;
}

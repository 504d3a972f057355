// The REST client: rate-limited, retried calls with credentials, typed errors from Status bodies, and raw streams.
import type { Readable } from "node:stream";
import { parsePlainYaml } from "../plain-data.js";
import { groupNames, type GroupNames } from "../api/group.js";
import type { ApiObject } from "../api/meta.js";
import { isPlatformError, PlatformError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { abortReason, systemClock, type Clock } from "../time/clock.js";
import { createCredentialSource, type CredentialOptions, type CredentialSource } from "./credentials.js";
import { TokenBucket, type RateLimiter } from "../time/token-bucket.js";
import { ResourceClientImpl, type ResourceRef } from "./resource-client.js";
import { checkRestConfig, type RestConfig } from "./rest-config.js";
import { mayRetry, retryDelayMs, retryPolicy, type RetryOptions, type RetryPolicy } from "./retry.js";
import { connectionError, errorFromResponse, isStatus, retryAfterSeconds, type CallContext } from "./status-errors.js";
import { AgentPool, Transport, type TransportResponse } from "./transport.js";
import type { ResourceClient } from "./types.js";
import { parseWarnings } from "./warnings.js";

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

export interface RequestOptions {
  readonly query?: Query;
  readonly headers?: Readonly<Record<string, string>>;
  /** Content type of the body (default the config's contentType, else application/json). */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** Whether the call may be repeated after a 429, 5xx or broken connection (default: GET, HEAD, DELETE). */
  readonly idempotent?: boolean;
  /** Overrides the config's request timeout for this call (0: none). */
  readonly timeoutMs?: number;
}

export interface ClientOptions extends CredentialOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly groupSuffix?: string;
  /** Each `Warning` header text of a response (the CLI's --warnings-as-errors); default: logged at warn. */
  readonly onWarning?: (warning: string, call: CallContext) => void;
  readonly retry?: RetryOptions;
  /** Default: a token bucket from the config's qps and burst. */
  readonly rateLimiter?: RateLimiter;
  /** Default: the process-wide pool, so clients of one server and identity share sockets. */
  readonly agents?: AgentPool;
}

export interface RestClient {
  readonly config: RestConfig;
  readonly names: GroupNames;
  /** A raw call: `/version`, discovery, create-only kinds. Returns the decoded body (undefined when empty). */
  request<T = unknown>(method: string, path: string, body?: unknown, options?: RequestOptions): Promise<T>;
  /** A streaming GET (watch): resolves with the body once a 2xx arrives; never times out. */
  openStream(path: string, options: RequestOptions & { readonly signal: AbortSignal }): Promise<Readable>;
  resource<T extends ApiObject = ApiObject>(ref: ResourceRef): ResourceClient<T>;
  /** Releases this client's share of the pooled connections. */
  close(): void;
}

const IDEMPOTENT = new Set(["GET", "HEAD", "DELETE", "OPTIONS"]);

export function createClient(config: RestConfig, options: ClientOptions = {}): RestClient {
  return new Client(config, options);
}

export function pathWithQuery(path: string, query: Query | undefined): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") q.set(k, String(v));
  const text = q.toString();
  return text ? `${path}${path.includes("?") ? "&" : "?"}${text}` : path;
}

class Client implements RestClient {
  readonly config: RestConfig;
  readonly names: GroupNames;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #limiter: RateLimiter;
  readonly #retry: RetryPolicy;
  readonly #credentials: CredentialSource;
  readonly #transport: Transport;
  readonly #onWarning: (warning: string, call: CallContext) => void;

  constructor(config: RestConfig, o: ClientOptions) {
    checkRestConfig(config);
    this.config = config;
    this.names = groupNames(o.groupSuffix);
    this.#logger = o.logger ?? silentLogger();
    this.#clock = o.clock ?? systemClock;
    this.#limiter = o.rateLimiter ?? new TokenBucket({ qps: config.qps, burst: config.burst, clock: this.#clock });
    this.#retry = retryPolicy(o.retry);
    this.#credentials = createCredentialSource(config, { ...o, clock: this.#clock, logger: this.#logger });
    this.#transport = new Transport(config, o.agents);
    this.#onWarning = o.onWarning ?? ((warning, call) => this.#logger.warn({ warning, method: call.method, path: call.path }, "server warning"));
  }

  resource<T extends ApiObject = ApiObject>(ref: ResourceRef): ResourceClient<T> {
    return new ResourceClientImpl<T>(this, ref);
  }

  close(): void {
    this.#transport.close();
  }

  async request<T = unknown>(method: string, path: string, body?: unknown, o: RequestOptions = {}): Promise<T> {
    return (await this.#call(method.toUpperCase(), path, body, o, false)) as T;
  }

  async openStream(path: string, o: RequestOptions & { readonly signal: AbortSignal }): Promise<Readable> {
    return (await this.#call("GET", path, undefined, { ...o, timeoutMs: 0 }, true)) as Readable;
  }

  async #call(method: string, path: string, body: unknown, o: RequestOptions, stream: boolean): Promise<unknown> {
    const ctx: CallContext = { method, path: pathWithQuery(path, o.query) };
    const payload = body === undefined ? undefined : Buffer.from(typeof body === "string" ? body : JSON.stringify(body), "utf8");
    const idempotent = o.idempotent ?? IDEMPOTENT.has(method);
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      await this.#limiter.acquire(o.signal);
      try {
        return await this.#once(ctx, payload, o, stream);
      } catch (e) {
        if (o.signal?.aborted) throw abortReason(o.signal);
        // Anything untyped here is a fault of ours, which a repeat would not cure.
        const err = isPlatformError(e) ? e : new PlatformError("INTERNAL", e instanceof Error ? e.message : String(e), { cause: e, retryable: false });
        // A 401 was refused before anything happened: once, refresh the credentials and try again.
        if (err.code === "UNAUTHORIZED" && !refreshed && this.#credentials.invalidate()) {
          refreshed = true;
          attempt--;
          continue;
        }
        if (err.details.clientTimeout === true || attempt >= this.#retry.maxAttempts || !mayRetry(err, idempotent, this.#retry.unreachable)) throw err;
        const delay = retryDelayMs(attempt, err, this.#retry);
        this.#logger.debug({ method, path: ctx.path, code: err.code, attempt, delayMs: delay }, "retrying request");
        await this.#clock.sleep(delay, o.signal);
        if (o.signal?.aborted) throw abortReason(o.signal);
      }
    }
  }

  async #once(ctx: CallContext, payload: Buffer | undefined, o: RequestOptions, stream: boolean): Promise<unknown> {
    const auth = await this.#credentials.get(o.signal);
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (auth.authorization) headers.Authorization = auth.authorization;
    if (payload) headers["Content-Type"] = o.contentType ?? this.config.contentType ?? "application/json";
    const timeoutMs = o.timeoutMs ?? this.config.timeoutMs ?? 0;
    // With a timeout, one controller that the timer and the caller's signal both abort. Not AbortSignal.any: on Node
    // 20 each signal it makes leaves a WeakRef in the source signal's set of dependants that nothing prunes, ~70 bytes
    // a request kept for good on a long-lived signal (a controller's); the listener here goes when the request ends.
    const own = timeoutMs > 0 ? new AbortController() : undefined;
    let timedOut = false;
    const cancelTimer = own ? this.#clock.setTimer(timeoutMs, () => ((timedOut = true), own.abort())) : undefined;
    const caller = o.signal;
    let unlink: (() => void) | undefined;
    if (own && caller) {
      const forward = () => own.abort(caller.reason);
      if (caller.aborted) forward();
      else {
        caller.addEventListener("abort", forward, { once: true });
        unlink = () => caller.removeEventListener("abort", forward);
      }
    }
    const signal = own?.signal ?? caller;
    try {
      const res = await this.#transport.send({
        method: ctx.method,
        path: ctx.path,
        headers,
        body: payload,
        signal,
        identity: auth.cert && auth.key ? { cert: auth.cert, key: auth.key } : undefined,
        stream,
      });
      for (const warning of parseWarnings(res.headers.warning)) this.#onWarning(warning, ctx);
      if (stream && res.status >= 200 && res.status < 300) return res.body;
      const text = await readBody(res, ctx, this.#transport.server);
      this.#logger.debug({ method: ctx.method, path: ctx.path, status: res.status }, "request done");
      if (res.status >= 300) {
        const answer = decode(res, text, ctx, true);
        const after = retryAfterSeconds(res.headers["retry-after"], isStatus(answer) ? answer : undefined, this.#clock.now());
        throw errorFromResponse(res.status, answer, ctx, after);
      }
      return decode(res, text, ctx, false);
    } catch (err) {
      if (timedOut && !caller?.aborted) {
        throw new PlatformError("TIMEOUT", `${ctx.method} ${ctx.path} did not complete within ${timeoutMs} ms (request timeout)`, {
          cause: err,
          details: { clientTimeout: true },
        });
      }
      throw err;
    } finally {
      cancelTimer?.();
      unlink?.();
    }
  }
}

/** The whole body as text. Listeners rather than `for await`: an async iterator per response was a visible cost. */
function readBody(res: TransportResponse, ctx: CallContext, server: string): Promise<string> {
  if (res.text !== undefined) return Promise.resolve(res.text);
  if (res.bytes !== undefined) return Promise.resolve(res.bytes.toString("utf8"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    const fail = (err: Error) => reject(err.name === "AbortError" ? err : connectionError(err, server, ctx));
    // A body that streams text (the in-thread channel's) gives strings.
    res.body.on("data", (chunk: Buffer | string) => chunks.push(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk));
    res.body.once("end", () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"));
    });
    res.body.once("error", fail);
    // A body cut off without an error event (the socket closed mid-body) must not leave the call waiting.
    res.body.once("close", () => {
      if (!ended) fail(Object.assign(new Error("the connection closed before the response body ended"), { code: "ECONNRESET" }));
    });
  });
}

/** JSON, or YAML when the server answered in YAML; an error body that is neither stays text. */
function decode(res: TransportResponse, text: string, ctx: CallContext, lenient: boolean): unknown {
  if (text.trim() === "") return lenient ? text : undefined;
  const yaml = /yaml/.test(String(res.headers["content-type"] ?? "").toLowerCase());
  try {
    return yaml ? parsePlainYaml(text) : JSON.parse(text);
  } catch (err) {
    if (lenient) return text;
    const what = yaml ? "YAML" : "JSON";
    throw new PlatformError("INTERNAL", `the response to ${ctx.method} ${ctx.path} is not valid ${what}: ${(err as Error).message}`, { cause: err, retryable: false });
  }
}

// An OIDC issuer's signing keys: discovery, then the JWKS over HTTPS (its own CA, an injectable agent), refetched on an unknown kid.
import { request, type Agent } from "node:https";
import type { JsonWebKey, KeyObject } from "node:crypto";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { JitteredBackoff } from "../../time/backoff.js";
import { publicKeyFor, type JwtAlgorithm } from "./jws.js";

type JWK = JsonWebKey & { kid?: string; alg?: string; use?: string };

/** Largest discovery document or key set read. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface OidcKeySourceOptions {
  readonly issuerURL: string;
  /** Where discovery is fetched (default `{issuerURL}/.well-known/openid-configuration`). */
  readonly discoveryURL?: string;
  /** PEM CA certificates the issuer's HTTPS is checked against (default the system roots). */
  readonly certificateAuthority?: string;
  /** Dials the issuer (an egress selection's agent); default node's global agent. */
  readonly agent?: Agent;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Least time between two fetches the JWKS for an unknown `kid` (default 10 s), so bad tokens cannot hammer the issuer. */
  readonly refetchIntervalMs?: number;
  /** Per request (default 10 s). */
  readonly timeoutMs?: number;
}

type Key = KeyObject;

/** GET a JSON document over HTTPS, refusing redirects, non-2xx answers and bodies above MAX_BODY_BYTES. */
function getJson(url: string, o: OidcKeySourceOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", headers: { accept: "application/json" }, ...(o.certificateAuthority && { ca: o.certificateAuthority }), ...(o.agent && { agent: o.agent }), timeout: o.timeoutMs ?? 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY_BYTES) req.destroy(new Error(`${url} answered more than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on("end", () => {
        if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) > 299) return reject(new Error(`${url} answered HTTP ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        } catch {
          reject(new Error(`${url} did not answer JSON`));
        }
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${url} did not answer in time`)));
    req.on("error", reject);
    req.end();
  });
}

/** The keys of one issuer. Not ready until discovery and the first JWKS succeeded; start() retries with backoff until then. */
export class OidcKeySource {
  readonly issuerURL: string;
  readonly #o: OidcKeySourceOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #jwksURL: string | undefined;
  #keys = new Map<string, { readonly jwk: JWK; readonly byAlg: Map<string, Key> }>();
  #ready = false;
  #lastError = "keys not fetched yet";
  #lastFetch = -Infinity;
  #inFlight: Promise<void> | undefined;
  #stopped = new AbortController();

  constructor(options: OidcKeySourceOptions) {
    this.#o = options;
    this.issuerURL = options.issuerURL;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger();
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** Why the source is not ready (the last fetch error). */
  get notReadyReason(): string {
    return this.#lastError;
  }

  /** Fetches until it succeeds or stop() is called; resolves once ready (or stopped). */
  async start(): Promise<void> {
    const backoff = new JitteredBackoff({ initialMs: 500, maxMs: 30_000 });
    const signal = this.#stopped.signal;
    while (!signal.aborted && !this.#ready) {
      try {
        await this.#fetch();
      } catch (err) {
        this.#lastError = (err as Error).message;
        const delay = backoff.next(this.#clock.now());
        this.#logger.warn({ issuer: this.issuerURL, err: this.#lastError, retryInMs: Math.round(delay) }, "cannot fetch the OIDC issuer's keys");
        await this.#clock.sleep(delay, signal);
      }
    }
  }

  stop(): void {
    this.#stopped.abort();
  }

  async #fetch(): Promise<void> {
    this.#lastFetch = this.#clock.now();
    if (!this.#jwksURL) {
      const discoveryURL = this.#o.discoveryURL ?? `${this.issuerURL.replace(/\/+$/, "")}/.well-known/openid-configuration`;
      const doc = (await getJson(discoveryURL, this.#o)) as { issuer?: unknown; jwks_uri?: unknown };
      if (doc?.issuer !== this.issuerURL) throw new Error(`discovery at ${discoveryURL} names issuer ${JSON.stringify(doc?.issuer)}, expected ${JSON.stringify(this.issuerURL)}`);
      if (typeof doc.jwks_uri !== "string" || !doc.jwks_uri.startsWith("https://")) throw new Error(`discovery at ${discoveryURL} has no https jwks_uri`);
      this.#jwksURL = doc.jwks_uri;
    }
    const set = (await getJson(this.#jwksURL, this.#o)) as { keys?: unknown };
    if (!Array.isArray(set?.keys)) throw new Error(`${this.#jwksURL} is not a JWK set`);
    const keys = new Map<string, { jwk: JWK; byAlg: Map<string, Key> }>();
    set.keys.forEach((jwk: JWK, i) => {
      if (jwk && typeof jwk === "object" && (jwk.use === undefined || jwk.use === "sig")) keys.set(jwk.kid ?? `#${i}`, { jwk, byAlg: new Map() });
    });
    this.#keys = keys;
    this.#ready = true;
    this.#lastError = "";
  }

  /** Refetches the JWKS unless one was fetched within the refetch interval; concurrent callers share one fetch. */
  async #refetch(): Promise<void> {
    if (this.#clock.now() - this.#lastFetch < (this.#o.refetchIntervalMs ?? 10_000)) return;
    this.#inFlight ??= this.#fetch()
      .catch((err: Error) => this.#logger.warn({ issuer: this.issuerURL, err: err.message }, "cannot refetch the OIDC issuer's keys"))
      .finally(() => (this.#inFlight = undefined));
    await this.#inFlight;
  }

  /** The keys that may have signed a token with this header: the one with its kid (refetching once when unknown), or every key of its algorithm. */
  async candidates(header: { kid?: string; alg: JwtAlgorithm }): Promise<Key[]> {
    if (!this.#ready) throw new Error(`the keys of issuer ${this.issuerURL} are not fetched yet: ${this.#lastError}`);
    const pick = () => (header.kid !== undefined ? [this.#keys.get(header.kid)].filter((k) => k !== undefined) : [...this.#keys.values()].filter((k) => k.jwk.alg === undefined || k.jwk.alg === header.alg));
    let found = pick();
    if (found.length === 0 && header.kid !== undefined) {
      await this.#refetch();
      found = pick();
    }
    const out: Key[] = [];
    for (const entry of found) {
      if (entry.jwk.alg !== undefined && entry.jwk.alg !== header.alg) continue;
      // A key that does not fit the algorithm (type, curve, size) is not a candidate.
      if (!entry.byAlg.has(header.alg)) {
        const key = publicKeyFor(entry.jwk, header.alg);
        if (key) entry.byAlg.set(header.alg, key);
      }
      const key = entry.byAlg.get(header.alg);
      if (key) out.push(key);
    }
    return out;
  }
}

// Prometheus metrics of the API server under upstream's names: requests and latencies, in-flight and long-running
// requests, watchers, stored objects, authentication attempts, the expiry of the certificates it holds, encryption
// at rest (stale reads, configuration reloads, transformations), and the SQLite store's flushes, commits and size.
import { performance } from "node:perf_hooks";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { processRegistry, withProcessMetrics } from "../process-metrics.js";
import { certificateExpiryGauge, type HeldCertificate } from "../pki/expiry-gauge.js";
import { AccumulatedCounter, AccumulatedHistogram } from "../accumulated-metrics.js";
import { sqliteMetrics } from "./storage/sqlite-metrics.js";
import type { ReloadStats } from "./encryption/encrypted-storage.js";
import { kmsMetrics } from "./encryption/kms-metrics.js";
import { encryptionReloadMetrics, type TransformationMetrics } from "./encryption/metrics.js";

/** What a request is, as upstream labels it (`verb` upper case: GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE…). */
export interface RequestLabels {
  readonly verb: string;
  readonly dry_run: string;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly subresource: string;
  /** `resource` (one object, or a create), `namespace`, `cluster`, or empty for a non-resource path. */
  readonly scope: string;
  /** Always `apiserver`. */
  readonly component: string;
}

type LabelName = keyof RequestLabels;

export const COMPONENT = "apiserver";

export interface ApiServerMetricsOptions {
  /** Objects per resource (`plural[.group]`), counted at each scrape; a resource that cannot be counted reports -1. */
  readonly storageObjects?: () => Promise<ReadonlyMap<string, number>>;
  /** The CA and serving certificates the server holds, read at each scrape. */
  readonly certificates?: () => readonly HeldCertificate[];
  /** Reads decrypted by a provider other than the first of their rule (encryption at rest), since start. */
  readonly staleReads?: () => number;
  /** Automatic reloads of the encryption configuration, when on. */
  readonly encryptionReloads?: () => ReloadStats;
  /** Values sealed and opened by encryption at rest. */
  readonly transformations?: TransformationMetrics;
}

/** Upstream's buckets for apiserver_request_duration_seconds. */
export const REQUEST_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** Upstream's buckets for apiserver_request_sli_duration_seconds (its request buckets from 50 ms). */
const SLI_BUCKETS = [0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60];
/** Upstream's buckets for authentication_duration_seconds: 1 ms doubling 15 times. */
const AUTHN_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);
/** Prometheus' default buckets, which upstream's authorization webhook histogram uses. */
const AUTHZ_WEBHOOK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
export type AuthenticationResult = "success" | "failure" | "error";

const READ_ONLY = { request_kind: "readOnly" } as const;
const MUTATING = { request_kind: "mutating" } as const;
const AUTHN_LABELS = { success: { result: "success" }, failure: { result: "failure" }, error: { result: "error" } } as const;

/**
 * The request path only adds to plain numbers and maps (a few hundred nanoseconds): what every request feeds (the
 * request counter, the latency histograms, authentication's counter and histogram) is an AccumulatedCounter or
 * AccumulatedHistogram, which the registry reads at scrape; prom-client's label hashing (~2 µs per labelled update,
 * ~6 µs with a spread label object) stays with the rarer metrics, the authorization webhook's one per round trip.
 */
export class ApiServerMetrics {
  readonly registry = new Registry();
  readonly durations: AccumulatedHistogram<RequestLabels>;
  /** The latency without admission webhooks' round trips (upstream's SLI, which its SLO alerts read): no dry_run label. */
  readonly sliDurations: AccumulatedHistogram<Omit<RequestLabels, "dry_run">>;
  readonly longRunning: Gauge<LabelName>;
  readonly watchers: Gauge<"group" | "version" | "kind">;
  readonly authDuration: AccumulatedHistogram<{ readonly result: AuthenticationResult }>;
  /** Token Secrets' tokens that authenticated: all, those their account lists (auto-generated), the others. */
  readonly #legacyTokens: { readonly all: Counter; readonly auto: Counter; readonly manual: Counter; readonly invalidated: Counter };
  readonly authzWebhookEvaluations: Counter<"name" | "result">;
  readonly authzWebhookDuration: Histogram<"name" | "result">;
  readonly terminations: Counter<Exclude<LabelName, "dry_run"> | "code">;
  readonly #requests: AccumulatedCounter<RequestLabels & { readonly code: string }>;
  readonly #inflight = { readOnly: 0, mutating: 0 };
  readonly #authAttempts: AccumulatedCounter<{ readonly result: AuthenticationResult }>;

  constructor(options: ApiServerMetricsOptions = {}) {
    processRegistry();
    const registers = [this.registry];
    const labels: LabelName[] = ["verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"];
    this.#requests = new AccumulatedCounter({
      name: "apiserver_request_total",
      help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
      registers,
    });
    this.durations = new AccumulatedHistogram<RequestLabels>({ name: "apiserver_request_duration_seconds", help: "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.", buckets: REQUEST_BUCKETS, registers });
    this.sliDurations = new AccumulatedHistogram({
      name: "apiserver_request_sli_duration_seconds",
      help: "Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.",
      buckets: SLI_BUCKETS,
      registers,
      labelNames: ["verb", "group", "version", "resource", "subresource", "scope", "component"],
    });
    const inflight = this.#inflight;
    new Gauge({
      name: "apiserver_current_inflight_requests",
      help: "Requests being served that are not long-running (watches are counted in apiserver_longrunning_requests), by request kind (readOnly or mutating).",
      labelNames: ["request_kind"],
      registers,
      collect() {
        this.set(READ_ONLY, inflight.readOnly);
        this.set(MUTATING, inflight.mutating);
      },
    });
    // Upstream's name and labels (no dry_run): requests the server ended itself, here the 504s at a deadline.
    this.terminations = new Counter({ name: "apiserver_request_terminations_total", help: "Number of requests which apiserver terminated in self-defense.", labelNames: ["verb", "group", "version", "resource", "subresource", "scope", "component", "code"], registers });
    this.longRunning = new Gauge({ name: "apiserver_longrunning_requests", help: "Gauge of all active long-running apiserver requests (watches) broken out by verb, group, version, resource, scope and component.", labelNames: labels, registers });
    this.watchers = new Gauge({ name: "apiserver_registered_watchers", help: "Number of currently registered watchers for a given resource.", labelNames: ["group", "version", "kind"], registers });
    this.#authAttempts = new AccumulatedCounter({
      name: "authentication_attempts",
      help: "Counter of authenticated attempts: success, failure (no credentials), error (credentials refused).",
      registers,
    });
    // Present at 0 from the start, so a rate over each result works before its first attempt.
    for (const result of ["success", "failure", "error"] as const) this.#authAttempts.inc(result, AUTHN_LABELS[result], 0);
    // Upstream's names and help texts (its ServiceAccount token metrics).
    this.#legacyTokens = {
      all: new Counter({ name: "serviceaccount_legacy_tokens_total", help: "Cumulative legacy service account tokens used", registers }),
      auto: new Counter({ name: "serviceaccount_legacy_auto_token_uses_total", help: "Cumulative auto-generated legacy tokens used", registers }),
      manual: new Counter({ name: "serviceaccount_legacy_manual_token_uses_total", help: "Cumulative manually created legacy tokens used", registers }),
      invalidated: new Counter({ name: "serviceaccount_invalid_legacy_auto_token_uses_total", help: "Cumulative invalid auto-generated legacy tokens used", registers }),
    };
    this.authDuration = new AccumulatedHistogram({ name: "authentication_duration_seconds", help: "Authentication duration in seconds broken out by result.", buckets: AUTHN_BUCKETS, registers });
    // Upstream's names: one round-trip per call (answers from the cache are not counted), by authorizer name and result.
    this.authzWebhookEvaluations = new Counter({ name: "apiserver_authorization_webhook_evaluations_total", help: "Round-trips to authorization webhooks.", labelNames: ["name", "result"], registers });
    this.authzWebhookDuration = new Histogram({ name: "apiserver_authorization_webhook_duration_seconds", help: "Request latency in seconds.", labelNames: ["name", "result"], buckets: AUTHZ_WEBHOOK_BUCKETS, registers });
    const count = options.storageObjects;
    if (count) {
      new Gauge({
        name: "apiserver_storage_objects",
        help: "Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
        labelNames: ["resource"],
        registers,
        async collect() {
          for (const [resource, n] of await count()) this.set({ resource }, n);
        },
      });
    }
    const stale = options.staleReads;
    if (stale) {
      let reported = 0;
      new Counter({
        name: "platform_ca_storage_stale_reads_total",
        help: "Stored objects read through an encryption provider other than the first of their rule: objects that `platform-ca storage rewrite` would re-encrypt.",
        registers,
        collect() {
          const now = stale();
          this.inc(now - reported);
          reported = now;
        },
      });
    }
    const reloads = options.encryptionReloads;
    if (reloads) encryptionReloadMetrics(registers, reloads);
    if (options.transformations) {
      options.transformations.register(this.registry);
      kmsMetrics.register(this.registry);
    }
    if (options.certificates) certificateExpiryGauge(this.registry, "platform_ca_", options.certificates);
    // The SQLite store's flushes, commits and size (none on etcd): per process, as the store may open before the server.
    sqliteMetrics.register(this.registry);
  }

  /** Counts a request as in flight from now; the tracker records it when it ends. */
  begin(method: string): RequestTracker {
    return new RequestTracker(this, method === "GET" || method === "HEAD" ? "readOnly" : "mutating");
  }

  authenticated(result: AuthenticationResult, startedAt: number): void {
    this.#authAttempts.inc(result, AUTHN_LABELS[result]);
    this.authDuration.observe(result, AUTHN_LABELS[result], (performance.now() - startedAt) / 1000);
  }

  /** One request authenticated with a token Secret's token. */
  legacyTokenUsed(autoGenerated: boolean): void {
    this.#legacyTokens.all.inc();
    (autoGenerated ? this.#legacyTokens.auto : this.#legacyTokens.manual).inc();
  }

  /** One refused use of a token Secret's token labelled invalid. */
  invalidatedLegacyTokenUsed(): void {
    this.#legacyTokens.invalidated.inc();
  }

  /** One call of an authorization webhook: `result` success, timeout, error or canceled. */
  authorizationWebhook(name: string, result: string, durationMs: number): void {
    const labels = { name, result };
    this.authzWebhookEvaluations.inc(labels);
    this.authzWebhookDuration.observe(labels, durationMs / 1000);
  }

  /** @internal Moves a request between the in-flight counts. */
  inflight(kind: "readOnly" | "mutating", delta: 1 | -1): void {
    this.#inflight[kind] += delta;
  }

  /** @internal Counts one finished request; `key` identifies `labels` (without the code). */
  counted(key: string, labels: RequestLabels, code: number): void {
    this.#requests.inc(`${key}\u0000${code}`, () => ({ ...labels, code: String(code) }));
  }

  /** @internal The SLI latency of a request: its label set without dry_run (the histogram keeps only its own labels). */
  sliObserve(labels: RequestLabels, seconds: number): void {
    this.sliDurations.observe(`${labels.verb}|${labels.group}|${labels.version}|${labels.resource}|${labels.subresource}|${labels.scope}`, labels, seconds);
  }

  /** The text exposition format, and its content type. */
  async scrape(): Promise<{ readonly contentType: string; readonly body: string }> {
    return { contentType: this.registry.contentType, body: await withProcessMetrics(this.registry) };
  }
}

/** What names a request's label set (without `component`, always the same) in the counts and the latency histogram. */
export function requestKey(labels: RequestLabels): string {
  return `${labels.verb}|${labels.dry_run}|${labels.group}|${labels.version}|${labels.resource}|${labels.subresource}|${labels.scope}`;
}

/** Labels of a request answered before routing (a 401): its HTTP method, nothing else known. */
function unroutedLabels(method: string): RequestLabels {
  return { verb: method, dry_run: "", group: "", version: "", resource: "", subresource: "", scope: "", component: COMPONENT };
}

/** One request from its arrival to its end; labels are set once it is routed. */
export class RequestTracker {
  readonly #m: ApiServerMetrics;
  readonly #kind: "readOnly" | "mutating";
  readonly #start = performance.now();
  #labels: RequestLabels | undefined;
  #watchKind: { group: string; version: string; kind: string } | undefined;
  #ended = false;
  #webhookSeconds = 0;

  constructor(m: ApiServerMetrics, kind: "readOnly" | "mutating") {
    this.#m = m;
    this.#kind = kind;
    m.inflight(kind, 1);
  }

  /** What the request addresses, once routing knows. */
  route(labels: RequestLabels): void {
    this.#labels = labels;
  }

  /** The request is a watch: it leaves the in-flight count for the long-running one until it ends. */
  longRunning(kind: string): void {
    if (!this.#labels || this.#watchKind || this.#ended) return;
    this.#watchKind = { group: this.#labels.group, version: this.#labels.version, kind };
    this.#m.inflight(this.#kind, -1);
    this.#m.longRunning.inc(this.#labels);
    this.#m.watchers.inc(this.#watchKind);
  }

  /** An admission webhook's round trip for this request: left out of its SLI latency. */
  webhookTime(seconds: number): void {
    this.#webhookSeconds += seconds;
  }

  /** The server ended the request itself with `code` (a 504 at its deadline); end() still records its answer. */
  terminated(code: number, method: string): void {
    const { dry_run: _dryRun, ...labels } = this.#labels ?? unroutedLabels(method);
    this.#m.terminations.inc({ ...labels, code: String(code) });
  }

  /** Records the request with its status code; `method` labels a request answered before routing. Once only. */
  end(code: number, method: string): void {
    if (this.#ended) return;
    this.#ended = true;
    const labels = this.#labels ?? unroutedLabels(method);
    if (this.#watchKind) {
      this.#m.longRunning.dec(labels);
      this.#m.watchers.dec(this.#watchKind);
    } else {
      this.#m.inflight(this.#kind, -1);
    }
    const key = requestKey(labels);
    const seconds = (performance.now() - this.#start) / 1000;
    this.#m.counted(key, labels, code);
    this.#m.durations.observe(key, labels, seconds);
    this.#m.sliObserve(labels, Math.max(0, seconds - this.#webhookSeconds));
  }
}

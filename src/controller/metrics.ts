// Prometheus metrics of one controller manager: its own prom-client registry, so two managers in a process never clash.
import { Counter, Gauge, Registry } from "prom-client";
import { AccumulatedCounter, AccumulatedHistogram } from "../accumulated-metrics.js";
import { processRegistry, withProcessMetrics } from "../process-metrics.js";
import { certificateExpiryGauge, type HeldCertificate } from "../pki/expiry-gauge.js";
import type { Signer } from "../../signers/signer.js";
import type { EventResult } from "./event-recorder-types.js";
import type { WorkQueueMetrics } from "./workqueue.js";

export interface ControllerMetricsOptions {
  /**
   * Also export the process's metrics (CPU, memory, event loop, GC) under upstream's unprefixed names
   * (process-metrics.ts); default false, as a library should not.
   */
  readonly processMetrics?: boolean;
  /** Metric name prefix (default `platform_ca_`). */
  readonly prefix?: string;
  /** The signers the controllers issue with: their CA certificates get expiry gauges, their issue counters start at 0. */
  readonly signers?: { list(): readonly Pick<Signer, "signerName" | "trustAnchors">[] };
}

/** Buckets in seconds for work that takes from a fraction of a millisecond (a signature) to seconds (a slow API call). */
export const FAST_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Certificate lifetimes: 10 minutes to 10 years. */
export const LIFETIME_BUCKETS = [600, 3600, 6 * 3600, 86_400, 7 * 86_400, 30 * 86_400, 90 * 86_400, 365 * 86_400, 3650 * 86_400];

type ByName = { readonly name: string };
type BySigner = { readonly signer: string };

/**
 * What every CSR feeds (the work queues' counts and latencies, issuance and approval counts and durations, Event
 * writes) is an AccumulatedCounter or AccumulatedHistogram keyed by its label values: ~25 updates a CSR cost the
 * controllers' thread ~6 µs through prom-client's label hashing. The rarer ones are prom-client's.
 */
export class ControllerMetrics {
  readonly registry: Registry;
  readonly queueAdds: AccumulatedCounter<ByName>;
  readonly queueRetries: AccumulatedCounter<ByName>;
  readonly queueLatency: AccumulatedHistogram<ByName>;
  readonly syncDuration: AccumulatedHistogram<ByName>;
  /** Keyed by signer name. */
  readonly csrSigned: AccumulatedCounter<BySigner>;
  /** Keyed by signer name and reason, joined by a NUL. */
  readonly csrFailed: AccumulatedCounter<BySigner & { readonly reason: string }>;
  readonly csrApproved: AccumulatedCounter<BySigner>;
  readonly approvalReviews: AccumulatedCounter<{ readonly result: string }>;
  readonly signingDuration: AccumulatedHistogram<BySigner>;
  readonly requestedDuration: AccumulatedHistogram<BySigner>;
  readonly honouredDuration: AccumulatedHistogram<BySigner>;
  /** Each work queue's depth as last reported, read at scrape. */
  readonly #depths = new Map<string, number>();
  readonly trustBundleSyncs: Counter<"signer" | "result">;
  /** When each signer's published CRL must be replaced: an alert on it finds a CRL that stopped being rebuilt. */
  readonly crlNextUpdate: Gauge<"signer">;
  readonly csrCleaned: Counter<"rule">;
  readonly leader: Gauge;
  readonly events: AccumulatedCounter<{ readonly result: EventResult }>;
  readonly eventsQueued: Gauge;
  /** The event queue of the current term's recorder, read at each scrape. */
  private eventQueue: { readonly queued: number } | undefined;
  private readonly processMetrics: boolean;
  /** Sources of the certificates reported by the expiry gauge, read at each scrape. */
  private readonly held: (() => readonly HeldCertificate[])[] = [];

  constructor(options: ControllerMetricsOptions = {}) {
    const p = options.prefix ?? "platform_ca_";
    const registers = [(this.registry = new Registry())];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) => new Counter<L>({ name: p + name, help, labelNames, registers });
    const accumulated = <L extends object>(name: string, help: string) => new AccumulatedCounter<L>({ name: p + name, help, registers });
    const histogram = <L extends object>(name: string, help: string, buckets: readonly number[]) => new AccumulatedHistogram<L>({ name: p + name, help, buckets, registers });
    const depths = this.#depths;
    new Gauge({
      name: `${p}workqueue_depth`,
      help: "Keys waiting in a controller's work queue.",
      labelNames: ["name"],
      registers,
      collect() {
        for (const [name, depth] of depths) this.set({ name }, depth);
      },
    });
    this.queueAdds = accumulated("workqueue_adds_total", "Keys added to a controller's work queue.");
    this.queueRetries = accumulated("workqueue_retries_total", "Keys re-queued with backoff after a failed sync.");
    this.queueLatency = histogram("workqueue_queue_duration_seconds", "Time a key waited in the queue before a worker took it.", FAST_BUCKETS);
    this.syncDuration = histogram("controller_sync_duration_seconds", "Time one sync of a key took.", FAST_BUCKETS);
    this.csrSigned = accumulated("csr_signed_total", "CertificateSigningRequests issued, per signer.");
    this.csrFailed = accumulated("csr_failed_total", "CertificateSigningRequests marked Failed, per signer and condition reason.");
    this.csrApproved = accumulated("csr_approved_total", "CertificateSigningRequests auto-approved, per signer.");
    this.approvalReviews = accumulated(
      "csr_approval_reviews_total",
      "Authorization checks of the approving controller: answered allowed or denied by a SubjectAccessReview, or reused (an allowed answer still within Approver.AuthorizationCacheTTL).",
    );
    for (const result of ["allowed", "denied", "reused"] as const) this.approvalReviews.inc(result, { result }, 0);
    this.signingDuration = histogram("csr_signing_duration_seconds", "Time the signer took to issue one certificate.", FAST_BUCKETS);
    this.requestedDuration = histogram("csr_requested_duration_seconds", "Lifetimes asked for with spec.expirationSeconds.", LIFETIME_BUCKETS);
    this.honouredDuration = histogram("csr_honoured_duration_seconds", "Lifetimes of the certificates issued (NotAfter − NotBefore).", LIFETIME_BUCKETS);
    this.trustBundleSyncs = counter("trust_bundle_syncs_total", "Trust-bundle publisher syncs per signer, by result.", ["signer", "result"]);
    this.crlNextUpdate = new Gauge({ name: `${p}crl_next_update_timestamp_seconds`, help: "nextUpdate of each signer's published CRL, in seconds since the epoch.", labelNames: ["signer"], registers });
    this.csrCleaned = counter("csr_cleaned_total", "CertificateSigningRequests deleted by the cleaner, per rule.", ["rule"]);
    this.leader = new Gauge({ name: `${p}leader`, help: "1 while this replica holds the lease (or runs without leader election).", registers });
    this.events = accumulated("events_total", "Event writes written, failed or throttled (429: queued again), and events dropped because the recorder's queue was full.");
    // Present at 0 from the start, so a rate over `dropped` works before the first drop.
    for (const result of ["written", "failed", "dropped", "throttled"] as const) this.events.inc(result, { result }, 0);
    const queue = (): number => this.eventQueue?.queued ?? 0;
    this.eventsQueued = new Gauge({
      name: `${p}events_queued`,
      help: "Event series waiting for a writer in the event recorder.",
      registers,
      collect() {
        this.set(queue());
      },
    });
    const signers = options.signers?.list() ?? [];
    // Present at 0 from the start, so an issue rate per signer works before the first certificate.
    for (const s of signers) this.csrSigned.inc(s.signerName, { signer: s.signerName }, 0);
    if (signers.length > 0) this.held.push(() => signers.flatMap((s) => anchorsOf(s).map((pem) => ({ usage: "ca", name: s.signerName, pem }))));
    certificateExpiryGauge(this.registry, p, () => this.held.flatMap((source) => source()));
    this.processMetrics = options.processMetrics === true;
    if (this.processMetrics) processRegistry();
  }

  /** Reports the certificates `source` names in the expiry gauge from now on (the ops endpoint's serving certificate). */
  holdCertificates(source: () => readonly HeldCertificate[]): void {
    this.held.push(source);
  }

  /** Observers for a WorkQueue's `metrics` option. */
  workQueue(): WorkQueueMetrics {
    const depths = this.#depths;
    return {
      depth: (name, depth) => void depths.set(name, depth),
      add: (name) => this.queueAdds.inc(name, { name }),
      retry: (name) => this.queueRetries.inc(name, { name }),
      queueLatency: (name, ms) => this.queueLatency.observe(name, { name }, ms / 1000),
      workDuration: (name, ms) => this.syncDuration.observe(name, { name }, ms / 1000),
    };
  }

  /** The `onResult` option of an EventRecorder. */
  eventResult(): (result: EventResult) => void {
    return (result) => this.events.inc(result, { result });
  }

  /** Reports `recorder`'s queue from now on (each leadership term has a recorder of its own). */
  watchEventQueue(recorder: { readonly queued: number }): void {
    this.eventQueue = recorder;
  }

  /** The text exposition format, and its content type. */
  async scrape(): Promise<{ readonly contentType: string; readonly body: string }> {
    return { contentType: this.registry.contentType, body: this.processMetrics ? await withProcessMetrics(this.registry) : await this.registry.metrics() };
  }
}

/** A signer's published CA certificates; none while it cannot say (its CA files are being replaced or are broken). */
function anchorsOf(signer: Pick<Signer, "trustAnchors">): readonly string[] {
  try {
    return signer.trustAnchors();
  } catch {
    return [];
  }
}

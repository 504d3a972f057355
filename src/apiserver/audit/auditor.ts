// Audit of requests: per request, the policy's decision, then the events of its stages written to every sink (blocking mode).
import { randomUUID } from "node:crypto";
import { Counter, type Registry } from "prom-client";
import { formatMicroTime } from "../../api/meta.js";
import { auditApiVersion, type AuditPolicy, type AuditStage } from "../../config/audit-policy.js";
import type { Clock } from "../../time/clock.js";
import { silentLogger, type Logger } from "../../logger.js";
import { sourceIPs } from "../../audit/event.js";
import type { AuditSink } from "../../audit/log-backend.js";
import { evaluatePolicy } from "../../audit/policy.js";
import { AuditContext, type AuditedAttributes, type AuditRequest, type AuditWriter } from "./audit-context.js";

export interface AuditorOptions {
  readonly policy: AuditPolicy;
  /** Where events go: the log file, the webhook, or both (each event goes to every sink). */
  readonly sink: AuditSink | readonly AuditSink[];
  readonly groupSuffix: string;
  readonly clock: Clock;
  /** Where `apiserver_audit_event_total`, `apiserver_audit_error_total` and `apiserver_audit_requests_rejected_total` are registered. */
  readonly metrics?: Registry;
  readonly logger?: Logger;
}

/** The client's `Audit-ID` when it sent one, else a new UUID; always echoed as the `Audit-Id` response header. */
export function auditIdOf(header: string | string[] | undefined): string {
  const id = Array.isArray(header) ? header[0] : header;
  return id && id.length <= 256 ? id : randomUUID();
}

export { sourceIPs };

/** The events queued in one turn of the event loop, and what their requests wait on. */
interface Batch {
  lines: string;
  count: number;
  /** Settles once every sink took the batch; RequestReceived events wait on `received`, the later stages on `later`. */
  readonly received: Deferred;
  readonly later: Deferred;
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  // No request of this turn may wait on it: its failure must not be an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class Auditor implements AuditWriter {
  readonly apiVersion: string;
  readonly #sinks: readonly AuditSink[];
  readonly #logger: Logger;
  #events = 0;
  readonly #errors = new Map<string, number>();
  #rejected = 0;
  #batch: Batch | undefined;
  #stampMs = Number.NaN;
  #stamp = "";

  constructor(readonly o: AuditorOptions) {
    this.apiVersion = auditApiVersion(o.groupSuffix);
    this.#sinks = Array.isArray(o.sink) ? o.sink : [o.sink as AuditSink];
    this.#logger = o.logger ?? silentLogger();
    for (const sink of this.#sinks) sink.attach?.((plugin, events, err) => this.#failed(plugin, events, err));
    const self = this;
    if (o.metrics) {
      new Counter({ name: "apiserver_audit_event_total", help: "Counter of audit events generated and sent to the audit backend.", registers: [o.metrics], collect() { this.inc(self.#events); self.#events = 0; } });
      new Counter({
        name: "apiserver_audit_error_total",
        help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.",
        labelNames: ["plugin"],
        registers: [o.metrics],
        collect() {
          // Every sink's label is present from the start (at 0), as upstream's are once a plugin is configured.
          for (const sink of self.#sinks) this.inc({ plugin: sink.plugin ?? "log" }, 0);
          for (const [plugin, n] of self.#errors) this.inc({ plugin }, n);
          self.#errors.clear();
        },
      });
      new Counter({ name: "apiserver_audit_requests_rejected_total", help: "Counter of apiserver requests rejected due to an error in audit logging backend.", registers: [o.metrics], collect() { this.inc(self.#rejected); self.#rejected = 0; } });
    }
  }

  /** The policy's decision for a request, and its audit context (undefined at level None: nothing more is done). */
  begin(a: AuditedAttributes, request: () => AuditRequest): AuditContext | undefined {
    const decision = evaluatePolicy(this.o.policy, a);
    if (decision.level === "None") return undefined;
    return new AuditContext(this, decision, a, request());
  }

  /** @internal The clock's time as a MicroTime; requests within one millisecond share one formatted string. */
  timestamp(): string {
    const ms = this.o.clock.now();
    if (ms !== this.#stampMs) {
      this.#stampMs = ms;
      this.#stamp = formatMicroTime(new Date(ms));
    }
    return this.#stamp;
  }

  /** @internal A request was answered 500 because its audit could not be stored. */
  rejected(): void {
    this.#rejected++;
  }

  #failed(plugin: string, events: number, err: unknown): void {
    this.#errors.set(plugin, (this.#errors.get(plugin) ?? 0) + events);
    this.#logger.error({ plugin, events, err: (err as Error)?.message ?? String(err) }, "audit events could not be stored");
  }

  /**
   * @internal Queues JSON lines (`events` of them); resolves once every sink took the batch holding it, rejects when a sink that
   * fails requests (at this stage) could not. The events queued while the event loop runs one turn are written
   * together (one write call per sink), as the storage commits writes in groups.
   */
  write(lines: string, stage: AuditStage, events = 1): Promise<void> {
    const batch = (this.#batch ??= this.#newBatch());
    batch.lines += lines;
    batch.count += events;
    return (stage === "RequestReceived" ? batch.received : batch.later).promise;
  }

  #newBatch(): Batch {
    const batch: Batch = { lines: "", count: 0, received: deferred(), later: deferred() };
    setImmediate(() => {
      this.#batch = undefined;
      void this.#flush(batch);
    });
    return batch;
  }

  async #flush(b: Batch): Promise<void> {
    this.#events += b.count;
    let failReceived: unknown;
    let failLater: unknown;
    const failed = (sink: AuditSink, err: unknown) => {
      this.#failed(sink.plugin ?? "log", b.count, err);
      const fails = sink.failsRequest ?? "always";
      if (fails !== "never") failReceived ??= err;
      if (fails === "always") failLater ??= err;
    };
    // Every sink is given the batch first (a synchronous one is done then), then the asynchronous ones are awaited together.
    const waits: Promise<void>[] = [];
    for (const sink of this.#sinks) {
      try {
        const p = sink.write(b.lines);
        if (p) waits.push(p.catch((err: unknown) => failed(sink, err)));
      } catch (err) {
        failed(sink, err);
      }
    }
    if (waits.length > 0) await Promise.all(waits);
    if (failReceived === undefined) b.received.resolve();
    else b.received.reject(failReceived);
    if (failLater === undefined) b.later.resolve();
    else b.later.reject(failLater);
  }
}

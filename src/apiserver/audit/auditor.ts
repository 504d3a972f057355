// Audit of requests: per request, the policy's decision, then one Event per stage written to the sink (blocking mode).
import { randomUUID } from "node:crypto";
import { Counter, type Registry } from "prom-client";
import type { UserInfo } from "../../api/meta.js";
import { auditApiVersion, levelAtLeast, type AuditPolicy, type AuditStage } from "../../config/audit-policy.js";
import type { Clock } from "../../time/clock.js";
import { auditUserAgent, bodyKind, microTime, redactBody, sourceIPs, type AuditEvent, type AuditResponseStatus } from "../../audit/event.js";
import type { AuditSink } from "../../audit/log-backend.js";
import { evaluatePolicy, type AuditAttributes, type AuditDecision } from "../../audit/policy.js";

export interface AuditorOptions {
  readonly policy: AuditPolicy;
  readonly sink: AuditSink;
  readonly groupSuffix: string;
  readonly clock: Clock;
  /** Where `apiserver_audit_event_total` and `apiserver_audit_error_total` are registered. */
  readonly metrics?: Registry;
}

/** What the HTTP layer knows of a request when its audit begins, beside its attributes (read only when it is audited). */
export interface AuditRequest {
  readonly auditID: string;
  readonly requestURI: string;
  /** Who sent the request when it impersonates `user`. */
  readonly impersonator?: UserInfo;
  readonly userAgent?: string;
  readonly sourceIPs: string[];
  /** The request body, decoded only when the level records it (or a create names its object). */
  readonly body?: () => unknown;
}

/** The client's `Audit-ID` when it sent one, else a new UUID; always echoed as the `Audit-Id` response header. */
export function auditIdOf(header: string | string[] | undefined): string {
  const id = Array.isArray(header) ? header[0] : header;
  return id && id.length <= 256 ? id : randomUUID();
}

export { sourceIPs };

export class Auditor {
  readonly apiVersion: string;
  #events = 0;
  #errors = 0;
  #pending = "";
  #pendingEvents = 0;
  #flushed: Promise<void> | undefined;

  constructor(readonly o: AuditorOptions) {
    this.apiVersion = auditApiVersion(o.groupSuffix);
    const self = this;
    if (o.metrics) {
      new Counter({ name: "apiserver_audit_event_total", help: "Counter of audit events generated and sent to the audit backend.", registers: [o.metrics], collect() { this.inc(self.#events); self.#events = 0; } });
      new Counter({ name: "apiserver_audit_error_total", help: "Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.", labelNames: ["plugin"], registers: [o.metrics], collect() { this.inc({ plugin: "log" }, self.#errors); self.#errors = 0; } });
    }
  }

  /** The policy's decision for a request, and its audit context (undefined at level None: nothing more is done). */
  begin(a: AuditAttributes & { readonly user: UserInfo; readonly version?: string }, request: () => AuditRequest): AuditContext | undefined {
    const decision = evaluatePolicy(this.o.policy, a);
    if (decision.level === "None") return undefined;
    return new AuditContext(this, decision, a, request());
  }

  /**
   * @internal Queues one JSON line; resolves once the batch holding it is written, rejects when that write
   * failed (the request then fails rather than going unrecorded). The events queued while the event loop runs one
   * turn are written together (one write call), as the storage commits writes in groups.
   */
  write(line: string): Promise<void> {
    this.#pending += line;
    this.#pendingEvents++;
    return (this.#flushed ??= new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        const [batch, count] = [this.#pending, this.#pendingEvents];
        this.#pending = "";
        this.#pendingEvents = 0;
        this.#flushed = undefined;
        try {
          this.o.sink.write(batch);
          this.#events += count;
          resolve();
        } catch (err) {
          this.#errors += count;
          reject(err);
        }
      });
    }));
  }
}

const DONE = Promise.resolve();

/** One request's audit: the event in progress and the stages still to write. */
export class AuditContext {
  readonly event: AuditEvent;
  readonly annotations: Record<string, string> = {};
  /** Set when the request failed with an internal error: its last stage is Panic. */
  panicked = false;
  #done = false;
  #head: string | undefined;
  readonly #kind: string | undefined;
  /** Recorded from the stage after RequestReceived on, as upstream logs it once the handler decoded it. */
  #requestObject: unknown;

  constructor(
    private readonly auditor: Auditor,
    readonly decision: AuditDecision,
    a: AuditAttributes & { readonly user: UserInfo; readonly version?: string },
    r: AuditRequest,
  ) {
    this.#kind = bodyKind(a.resource, a.subresource);
    const now = microTime(auditor.o.clock.now());
    const impersonated = r.impersonator !== undefined;
    this.event = {
      kind: "Event",
      apiVersion: auditor.apiVersion,
      level: decision.level,
      auditID: r.auditID,
      stage: "RequestReceived",
      requestURI: r.requestURI,
      verb: a.verb,
      user: impersonated ? r.impersonator! : a.user,
      ...(impersonated && { impersonatedUser: a.user }),
      sourceIPs: r.sourceIPs,
      ...(r.userAgent !== undefined && { userAgent: auditUserAgent(r.userAgent) }),
      ...(a.resourceRequest && {
        objectRef: {
          resource: a.resource,
          ...(a.namespace && { namespace: a.namespace }),
          ...(a.name !== undefined && { name: a.name }),
          apiGroup: a.group ?? "",
          ...(a.version && { apiVersion: a.version }),
          ...(a.subresource && { subresource: a.subresource }),
        },
      }),
      requestReceivedTimestamp: now,
      stageTimestamp: now,
    };
    // As upstream: the request object names the object of a create (at Metadata already); bodies only from Request.
    const wantsBody = a.resourceRequest && r.body !== undefined && (levelAtLeast(decision.level, "Request") || a.verb === "create");
    if (wantsBody) {
      let body: unknown;
      try {
        body = r.body!();
      } catch {
        body = undefined; // an undecodable body is answered 400 by the handler; the event has no request object
      }
      const meta = (body as { metadata?: { name?: unknown; namespace?: unknown } } | undefined)?.metadata;
      const ref = this.event.objectRef;
      if (ref && ref.name === undefined && typeof meta?.name === "string") ref.name = meta.name;
      if (levelAtLeast(decision.level, "Request") && body !== undefined) this.#requestObject = redactBody(body, decision.omitManagedFields, this.#kind);
    }
  }

  annotate(key: string, value: string): void {
    this.annotations[key] = value;
  }

  /** Writes the RequestReceived stage (unless omitted); rejects when the sink fails. */
  received(): Promise<void> {
    return this.#emit("RequestReceived");
  }

  /** A long-running request (watch) has started its response. */
  started(code: number): Promise<void> {
    if (this.#requestObject !== undefined) this.event.requestObject = this.#requestObject;
    this.event.responseStatus = { metadata: {}, code };
    return this.#emit("ResponseStarted");
  }

  /**
   * The response is complete (or the handler failed: Panic). `body` is the response as sent, read only at
   * RequestResponse level or for a failure's Status. Rejects when the sink fails; writes once.
   */
  complete(code: number, body: () => unknown): Promise<void> {
    if (this.#done) return DONE;
    this.#done = true;
    const failed = code >= 400 ? (body() as Partial<AuditResponseStatus> | undefined) : undefined;
    this.event.responseStatus = failed && typeof failed === "object"
      ? { metadata: {}, ...(failed.status && { status: failed.status }), ...(failed.message && { message: failed.message }), ...(failed.reason && { reason: failed.reason }), code }
      : { metadata: {}, code };
    if (this.#requestObject !== undefined) this.event.requestObject = this.#requestObject;
    if (this.decision.level === "RequestResponse" && this.event.objectRef) {
      const response = failed ?? body();
      if (response !== undefined) this.event.responseObject = redactBody(response, this.decision.omitManagedFields, this.#kind);
    }
    return this.#emit(this.panicked ? "Panic" : "ResponseComplete");
  }

  /**
   * Writes the event as one JSON line. The fields every stage shares are serialized once per request (`#head`); each
   * stage adds its own: the stage, its time, and what is known by then.
   */
  #emit(stage: AuditStage): Promise<void> {
    if (this.decision.omitStages.includes(stage)) return DONE;
    const e = this.event;
    e.stage = stage;
    e.stageTimestamp = microTime(this.auditor.o.clock.now());
    if (Object.keys(this.annotations).length > 0) e.annotations = this.annotations;
    let line = (this.#head ??= headOf(e)) + `,"stage":"${stage}","stageTimestamp":"${e.stageTimestamp}"`;
    if (e.responseStatus) line += `,"responseStatus":${JSON.stringify(e.responseStatus)}`;
    if (e.requestObject !== undefined) line += `,"requestObject":${JSON.stringify(e.requestObject)}`;
    if (e.responseObject !== undefined) line += `,"responseObject":${JSON.stringify(e.responseObject)}`;
    if (e.annotations) line += `,"annotations":${JSON.stringify(e.annotations)}`;
    return this.auditor.write(`${line}}\n`);
  }
}

/** The JSON of the fields every stage of a request shares, without its closing brace. */
function headOf(e: AuditEvent): string {
  const { kind, apiVersion, level, auditID, requestURI, verb, user, impersonatedUser, sourceIPs, userAgent, objectRef, requestReceivedTimestamp } = e;
  const head = JSON.stringify({ kind, apiVersion, level, auditID, requestURI, verb, user, impersonatedUser, sourceIPs, userAgent, objectRef, requestReceivedTimestamp });
  return head.slice(0, -1);
}

// One request's audit: its Event built from the request, then one JSON line per stage handed to the Auditor's sinks.
import type { UserInfo } from "../../api/meta.js";
import { levelAtLeast, type AuditStage } from "../../config/audit-policy.js";
import { auditUserAgent, bodyKind, redactBody, type AuditEvent, type AuditObjectRef, type AuditResponseStatus } from "../../audit/event.js";
import type { AuditAttributes, AuditDecision } from "../../audit/policy.js";

/** What the policy decides on, with who asked and the resource's version: one audited request's attributes. */
export type AuditedAttributes = AuditAttributes & { readonly user: UserInfo; readonly version?: string };

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

/**
 * What a request's audit needs of the Auditor that began it (the Auditor is one): declared here so that this file
 * does not import auditor.ts back.
 */
export interface AuditWriter {
  readonly apiVersion: string;
  /** The clock's time as a MicroTime. */
  timestamp(): string;
  /** Queues JSON lines (`events` of them) for the sinks; rejects when a sink that fails requests at this stage could not take them. */
  write(lines: string, stage: AuditStage, events?: number): Promise<void>;
}

const DONE = Promise.resolve();
/** The verbs that change nothing: their RequestReceived line may wait for the next stage's write. */
const READS = new Set(["get", "list", "watch"]);

/** One request's audit: the event in progress and the stages still to write. */
export class AuditContext {
  readonly event: AuditEvent;
  readonly annotations: Record<string, string> = {};
  /** Set when the request failed with an internal error: its last stage is Panic. */
  panicked = false;
  /** Set when the request was answered 500 because its audit could not be stored (counted once). */
  rejected = false;
  #done = false;
  #head: string | undefined;
  /** A read's RequestReceived line, written with the next stage. */
  #held: string | undefined;
  readonly #kind: string | undefined;
  /** Recorded from the stage after RequestReceived on, as upstream logs it once the handler decoded it. */
  #requestObject: unknown;

  /** Whether the last stage has been begun: the answer is on its way. */
  get completed(): boolean {
    return this.#done;
  }

  constructor(
    private readonly auditor: AuditWriter,
    readonly decision: AuditDecision,
    a: AuditedAttributes,
    r: AuditRequest,
  ) {
    this.#kind = bodyKind(a.resource, a.subresource);
    const now = auditor.timestamp();
    const impersonated = r.impersonator !== undefined;
    // Built field by field (no spread of temporaries): this runs for every audited request.
    const e: AuditEvent = {
      kind: "Event",
      apiVersion: auditor.apiVersion,
      level: decision.level,
      auditID: r.auditID,
      stage: "RequestReceived",
      requestURI: r.requestURI,
      verb: a.verb,
      user: impersonated ? r.impersonator! : a.user,
      requestReceivedTimestamp: now,
      stageTimestamp: now,
    };
    if (impersonated) e.impersonatedUser = a.user;
    e.sourceIPs = r.sourceIPs;
    if (r.userAgent !== undefined) e.userAgent = auditUserAgent(r.userAgent);
    if (a.resourceRequest) {
      const ref: AuditObjectRef = { resource: a.resource };
      if (a.namespace) ref.namespace = a.namespace;
      if (a.name !== undefined) ref.name = a.name;
      ref.apiGroup = a.group ?? "";
      if (a.version) ref.apiVersion = a.version;
      if (a.subresource) ref.subresource = a.subresource;
      e.objectRef = ref;
    }
    this.event = e;
    // As upstream's LogRequestObject: the request object names the object of a create and gives the uid and
    // resourceVersion an update was made against (at Metadata already); the body itself is recorded only from Request.
    const wantsBody = a.resourceRequest && r.body !== undefined && (levelAtLeast(decision.level, "Request") || a.verb === "create" || a.verb === "update");
    if (wantsBody) {
      let body: unknown;
      try {
        body = r.body!();
      } catch {
        body = undefined; // an undecodable body is answered 400 by the handler; the event has no request object
      }
      const meta = (body as { metadata?: { name?: unknown; uid?: unknown; resourceVersion?: unknown } } | undefined)?.metadata;
      const ref = this.event.objectRef;
      if (ref && meta && typeof meta === "object") {
        if (ref.name === undefined && typeof meta.name === "string") ref.name = meta.name;
        if (typeof meta.uid === "string" && meta.uid !== "") ref.uid = meta.uid;
        if (typeof meta.resourceVersion === "string" && meta.resourceVersion !== "") ref.resourceVersion = meta.resourceVersion;
      }
      if (levelAtLeast(decision.level, "Request") && body !== undefined) this.#requestObject = redactBody(body, decision.omitManagedFields, this.#kind);
    }
  }

  annotate(key: string, value: string): void {
    this.annotations[key] = value;
  }

  /**
   * Writes the RequestReceived stage (unless omitted); rejects when the sink fails. A read (get, list, watch) changes
   * nothing, so its RequestReceived line is held and written in one batch with its next stage: the answer still
   * leaves only once both lines are stored (a failure still turns it into a 500), for one write instead of two.
   */
  received(): Promise<void> {
    if (READS.has(this.event.verb) && !this.decision.omitStages.includes("RequestReceived")) {
      this.#held = this.#line("RequestReceived");
      return DONE;
    }
    return this.#emit("RequestReceived");
  }

  /** A request refused at authentication: its only event, ResponseStarted with the 401 (as upstream's failed-authentication audit). */
  failedAuthentication(message: string): Promise<void> {
    this.#done = true;
    this.event.responseStatus = { metadata: {}, message, code: 401 };
    return this.#emit("ResponseStarted");
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

  /** Writes the stage's line (after a held RequestReceived line, if any). */
  #emit(stage: AuditStage): Promise<void> {
    const held = this.#held;
    this.#held = undefined;
    if (this.decision.omitStages.includes(stage)) return held === undefined ? DONE : this.auditor.write(held, "RequestReceived");
    const line = this.#line(stage);
    // Together, the two lines wait on what RequestReceived waits on: a superset of the sinks that fail later stages.
    return held === undefined ? this.auditor.write(line, stage) : this.auditor.write(held + line, "RequestReceived", 2);
  }

  /**
   * The event at `stage` as one JSON line. The fields every stage shares are serialized once per request (`#head`);
   * each stage adds its own: the stage, its time, and what is known by then.
   */
  #line(stage: AuditStage): string {
    const e = this.event;
    e.stage = stage;
    e.stageTimestamp = stage === "RequestReceived" ? e.requestReceivedTimestamp : this.auditor.timestamp();
    if (Object.keys(this.annotations).length > 0) e.annotations = this.annotations;
    let line = (this.#head ??= headOf(e)) + `,"stage":"${stage}","stageTimestamp":"${e.stageTimestamp}"`;
    if (e.responseStatus) line += `,"responseStatus":${JSON.stringify(e.responseStatus)}`;
    if (e.requestObject !== undefined) line += `,"requestObject":${JSON.stringify(e.requestObject)}`;
    if (e.responseObject !== undefined) line += `,"responseObject":${JSON.stringify(e.responseObject)}`;
    if (e.annotations) line += `,"annotations":${JSON.stringify(e.annotations)}`;
    return `${line}}\n`;
  }
}

/** The JSON of the fields every stage of a request shares, without its closing brace (in upstream's field order). */
function headOf(e: AuditEvent): string {
  let head = `{"kind":"Event","apiVersion":${JSON.stringify(e.apiVersion)},"level":"${e.level}","auditID":${JSON.stringify(e.auditID)},"requestURI":${JSON.stringify(e.requestURI)},"verb":${JSON.stringify(e.verb)},"user":${userJson(e.user)}`;
  if (e.impersonatedUser !== undefined) head += `,"impersonatedUser":${userJson(e.impersonatedUser)}`;
  head += `,"sourceIPs":${JSON.stringify(e.sourceIPs)}`;
  if (e.userAgent !== undefined) head += `,"userAgent":${JSON.stringify(e.userAgent)}`;
  if (e.objectRef !== undefined) head += `,"objectRef":${JSON.stringify(e.objectRef)}`;
  return `${head},"requestReceivedTimestamp":"${e.requestReceivedTimestamp}"`;
}

/** A user's JSON, kept per frozen user object (`frozenUser`: one per credential, shared by its requests). */
const usersJson = new WeakMap<UserInfo, string>();
function userJson(user: UserInfo): string {
  let json = usersJson.get(user);
  if (json === undefined) {
    json = JSON.stringify(user);
    if (Object.isFrozen(user)) usersJson.set(user, json);
  }
  return json;
}

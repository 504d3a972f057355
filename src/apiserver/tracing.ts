// Tracing of the API server's requests: the request span (parent from traceparent only for privileged callers), and
// child spans for authentication, authorization, admission and storage. Installed only when tracing is on.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { UserInfo } from "../api/meta.js";
import { incomingContext, type IncomingContext, type TraceSpan, type Tracer } from "../tracing/tracer.js";
import { SYSTEM_MASTERS } from "./auth/identity.js";
import { MONITORING_GROUP } from "./auth/bootstrap-policy.js";
import { impersonatorOf, type Pipeline } from "./pipeline.js";
import { route, type ServedApis } from "./http/routes.js";
import type { Storage, StoredValue } from "./storage/types.js";

/**
 * Whose incoming trace context continues into the server's spans, as upstream (its tracing filter's
 * notSystemPrivilegedGroup): the sender, before impersonation, in system:masters or system:monitoring. Anyone else's
 * is only linked: an untrusted caller must not choose the trace ID, nor force sampling on.
 */
export function trustsTraceContext(user: UserInfo | undefined): boolean {
  const sender = user && (impersonatorOf(user) ?? user);
  return sender?.groups?.some((g) => g === SYSTEM_MASTERS || g === MONITORING_GROUP) ?? false;
}

/** Epoch milliseconds with sub-millisecond precision (span times). */
const nowMs = () => performance.timeOrigin + performance.now();

/** Upstream's span name: the method and the path with `{:namespace}` and `{:name}` (bounded cardinality); the method alone for other paths. */
export function requestSpanName(method: string, url: string, apis: ServedApis): string {
  const target = route(url.split("?")[0]!, apis);
  if (target?.type !== "resource") return method;
  const { group, version, plural } = target.def;
  const path = [group === "" ? "/api" : `/apis/${group}`, version, target.namespace !== undefined && "namespaces/{:namespace}", plural, target.name !== undefined && "{:name}", target.subresource].filter(Boolean).join("/");
  return `${method} ${path}`;
}

interface RequestScope {
  readonly start: number;
  readonly incoming: IncomingContext | undefined;
  attach(span: TraceSpan): void;
  span?: TraceSpan;
  /** When the pipeline's authentication ran (recorded by tracePipeline, keyed by the request's headers object). */
  authenticated?: { readonly start: number; readonly end: number };
}

/** Authentication timings by the request's headers object (the pipeline sees the headers, not the request). */
const authTimes = new WeakMap<object, { start: number; end: number }>();

/** The pipeline with a span around authorization and admission, and authentication timed (its span is opened with the request's). */
export function tracePipeline(pipeline: Pipeline, tracer: Tracer): Pipeline {
  return {
    async authenticate(request) {
      const start = nowMs();
      try {
        return await pipeline.authenticate(request);
      } finally {
        authTimes.set(request.headers, { start, end: nowMs() });
      }
    },
    authorize: (a) =>
      tracer.inSpan("authorization", { verb: a.verb, resource: a.resource ?? "", subresource: a.subresource ?? "" }, async (span) => {
        const decision = await pipeline.authorize(a);
        span.setAttributes({ decision: decision.allowed ? "allow" : "forbid" });
        return decision;
      }),
    admit: (a, obj, old) => tracer.inSpan("admission", { operation: a.verb, resource: a.resource ?? "", dryRun: a.dryRun === true }, () => pipeline.admit(a, obj, old)),
  };
}

const TRACED_STORAGE_CALLS = new Set(["get", "list", "create", "update", "delete", "compact"]);

/** The storage with a span per read and write (watches are long-running and stay untraced). */
export function traceStorage<V extends StoredValue>(storage: Storage<V>, tracer: Tracer): Storage<V> {
  return new Proxy(storage, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (typeof prop !== "string" || !TRACED_STORAGE_CALLS.has(prop)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => tracer.inSpan(`storage ${prop}`, typeof args[0] === "string" ? { key: args[0] } : {}, () => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}

/** Opens the request's span once its caller is known (or at its end, when authentication refused it). */
function openRequestSpan(scope: RequestScope, tracer: Tracer, method: string, name: () => string, user: UserInfo | undefined, auditId: unknown, headers: object): TraceSpan {
  const trusted = scope.incoming !== undefined && trustsTraceContext(user);
  const span = tracer.start(method, {
    kind: "server",
    startTimeMs: scope.start,
    // A trusted context is the parent; an untrusted one only a link, and the span starts a new trace.
    parent: trusted ? scope.incoming : null,
    ...(scope.incoming && !trusted && { links: [scope.incoming] }),
    attributes: { "audit-id": String(auditId ?? "") },
  });
  scope.span = span;
  scope.attach(span);
  // Routing the path again for the name is paid only by sampled requests.
  if (span.recording) span.rename(name());
  const auth = authTimes.get(headers);
  if (auth && span.recording) {
    const child = tracer.run(span, () => tracer.start("authentication", { startTimeMs: auth.start }));
    child.setAttributes({ authenticated: user !== undefined });
    child.end(auth.end);
  }
  return span;
}

/** Wraps the server's request listener so each request runs in its own trace scope, and opens its span after authentication. */
export function traceRequests(app: FastifyInstance, tracer: Tracer, apis: ServedApis): void {
  const server = app.server as Server;
  const scopes = new WeakMap<IncomingMessage, RequestScope>();
  const listeners = server.listeners("request") as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners("request");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const incoming = incomingContext(req.headers);
    // Nothing of this request can be sampled (no new traces, no context to continue): no scope, no span.
    if (incoming === undefined && !tracer.samplesNewTraces) {
      for (const listener of listeners) listener.call(server, req, res);
      return;
    }
    tracer.runPending((attach) => {
      const scope: RequestScope = { start: nowMs(), incoming, attach };
      scopes.set(req, scope);
      res.once("close", () => {
        const span = scope.span ?? openRequestSpan(scope, tracer, req.method ?? "", () => requestSpanName(req.method ?? "", req.url ?? "/", apis), undefined, res.getHeader("Audit-Id"), req.headers);
        span.setAttributes({ "http.response.status_code": res.statusCode });
        if (res.statusCode >= 500) span.fail(new Error(`answered ${res.statusCode}`));
        span.end();
      });
      for (const listener of listeners) listener.call(server, req, res);
    });
  });
  // Registered after the authentication hook, so it runs once the caller is known and before routing.
  app.addHook("onRequest", async (req, reply) => {
    const scope = scopes.get(req.raw);
    if (!scope || scope.span) return;
    const span = openRequestSpan(scope, tracer, req.method, () => requestSpanName(req.method, req.url, apis), req.platformUser ?? undefined, reply.raw.getHeader("Audit-Id"), req.raw.headers);
    if (span.recording) span.setAttributes({ "http.request.method": req.method, "url.path": req.url.split("?")[0]! });
  });
}

// The fastify application: one catch-all route, authentication and authorization, discovery, health, metrics, resources, Status errors.
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { UserInfo } from "../../api/meta.js";
import { PlatformError } from "../../errors.js";
import type { Pipeline } from "../pipeline.js";
import { auditIdOf, type Auditor } from "../audit/auditor.js";
import type { AuditContext } from "../audit/audit-context.js";
import { forbiddenError } from "../auth/authorizer.js";
import { COMPONENT, type ApiServerMetrics, type RequestLabels, type RequestTracker } from "../metrics.js";
import { authenticate } from "./authenticate.js";
import { peerCertificateChain } from "../auth/authn-x509.js";
import { serveOpenApi } from "../openapi/serve.js";
import { negotiate } from "./content.js";
import { serveHealth, type HealthSources } from "./health.js";
import { isPretty, type RawQuery } from "./query.js";
import { ResourceHandler, type ResourceHandlerDeps } from "./resource-handler.js";
import { verbOf } from "./resource-verb.js";
import { send } from "./respond.js";
import { isWatch, resourceAttributes, route, type Target } from "./routes.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, type RequestDeadline } from "../webhook/deadline.js";
import { auditRefusal, auditResponse, beginAudit, watchAudit } from "./audit-hooks.js";
import { compressResponse } from "./compression.js";
import { BODY_LIMIT_BYTES, classify, statusOf } from "./status.js";
import { answerTimeout, RequestTimeouts } from "./request-timeout.js";

export interface TlsServing {
  readonly key: string | Buffer;
  readonly cert: string | Buffer;
  /** CA bundle that client certificates are checked against. */
  readonly ca?: string | Buffer;
  /** Ask clients for a certificate (verified by the authentication hook, so unverified ones are not refused here). */
  readonly requestCert?: boolean;
}

export interface HttpAppOptions extends ResourceHandlerDeps {
  readonly tls?: TlsServing;
  /** Whether the server is ready to serve (readyz). */
  ready(): boolean;
  /** More checks of /healthz and /readyz (encryption at rest: `kms-providers`). */
  readonly healthChecks?: HealthSources["checks"];
  readonly metrics: ApiServerMetrics;
  /** Audit of requests; without it nothing is evaluated or recorded (the Audit-Id header is still echoed). */
  readonly auditor?: Auditor;
  /** --request-timeout: the deadline of a request without `timeout`, and the cap of one with it; default 60 s. */
  readonly requestTimeoutMs?: number;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Who sent the request, set by the onRequest hook before routing; null only until then. */
    platformUser: UserInfo | null;
    /** The request as the metrics count it, from the onRequest hook on. */
    platformTracker: RequestTracker | null;
    /** The request's audit, from routing on; null when no policy is configured or its level is None. */
    platformAudit: AuditContext | null;
    /** The request's deadline (its `timeout` parameter, at most --request-timeout), from routing on; null for a watch. */
    platformDeadline: RequestDeadline | null;
  }
}

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/**
 * Longest request line plus headers node accepts (its default is 16 KiB): room for long bearer tokens and
 * selectors. Longer ones are answered 431 with a Status.
 */
export const MAX_HEADER_BYTES = 64 * 1024;

export function buildHttpApp(o: HttpAppOptions): FastifyInstance {
  const https = o.tls
    ? { key: o.tls.key, cert: o.tls.cert, ca: o.tls.ca, requestCert: o.tls.requestCert ?? false, rejectUnauthorized: false, maxHeaderSize: MAX_HEADER_BYTES }
    : undefined;
  const app = Fastify({
    ...(https ? { https } : { http: { maxHeaderSize: MAX_HEADER_BYTES } }),
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    exposeHeadRoutes: false,
    forceCloseConnections: true,
    // Any path the request line can carry is routed (and then authenticated, and answered 404 when it names nothing).
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: MAX_HEADER_BYTES },
    // Errors fastify meets before routing (a malformed %-escape in the path) become a Status too, after
    // authentication like every other answer.
    frameworkErrors: (err, req, reply) => {
      authenticate(req, o).then(
        () => fail(req, reply, err),
        (authErr: unknown) => fail(req, reply, authErr),
      );
    },
    // Requests node's parser refuses never reach fastify: answer them with a Status on the raw socket.
    clientErrorHandler: (err, socket) => writeClientError(err as NodeJS.ErrnoException, socket),
  }) as unknown as FastifyInstance;
  // No TLS renegotiation (as Go's servers): a connection's client certificate is then fixed at the handshake,
  // which lets authentication read it once per connection (auth/authn-x509.ts).
  if (https) app.server.on("secureConnection", (socket: TLSSocket) => {
    socket.disableRenegotiation();
    // Read at the handshake, not at the first request: reading also clears the errors OpenSSL's own (ignored)
    // check of a bad chain leaves queued, which node would otherwise report on the next read as a TLS failure.
    peerCertificateChain(socket);
  });
  // Bodies stay raw: decoding depends on the endpoint (object, patch, DeleteOptions) and errors must become Status.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: BODY_LIMIT_BYTES }, (_req, body, done) => done(null, body));
  const resources = new ResourceHandler(o);
  const timeouts = new RequestTimeouts(o.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, (req, reply) => answerTimeout(req, reply, o));
  app.addHook("onClose", async () => timeouts.stop());
  const fail = (req: FastifyRequest, reply: FastifyReply, err: unknown) => {
    const { error, internal } = classify(err);
    if (internal) o.logger.error({ err, method: req.method, url: req.url }, "request failed");
    if (internal && req.platformAudit) req.platformAudit.panicked = true;
    const status = statusOf(error);
    if (status.details?.retryAfterSeconds) reply.header("Retry-After", String(status.details.retryAfterSeconds));
    return reply.code(status.code).type("application/json").send(JSON.stringify(status));
  };
  app.setErrorHandler((err, req, reply) => fail(req, reply, err));
  // Authentication comes first, as upstream's filter chain: before routing (an unknown path answers 401 like a
  // known one, so paths cannot be probed without credentials) and before the body is read (no 413 before 401).
  // onRequest hooks run for the not-found handler too.
  // The user rides on the request (a decoration, declared once so every request has the same shape).
  app.decorateRequest("platformUser", null);
  app.decorateRequest("platformTracker", null);
  app.decorateRequest("platformAudit", null);
  app.decorateRequest("platformDeadline", null);
  app.addHook("onRequest", async (req, reply) => {
    // On the raw response, so a watch (which writes its head itself) carries it too.
    reply.raw.setHeader("Audit-Id", auditIdOf(req.headers["audit-id"]));
    // Counted from arrival to the response's end, whatever ends it (a 401, a finished watch, a client gone).
    const tracker = (req.platformTracker = o.metrics.begin(req.method));
    reply.raw.once("close", () => {
      tracker.end(reply.raw.statusCode, req.method);
      // The same listener ends the request's deadline: one listener per request, not two.
      if (req.platformDeadline) timeouts.end(req.platformDeadline);
    });
    try {
      req.platformUser = await authenticate(req, o);
    } catch (err) {
      if (o.auditor) await auditRefusal(req, reply, o, err);
      throw err;
    }
  });
  const userOf = (req: FastifyRequest): UserInfo => {
    if (!req.platformUser) throw new PlatformError("UNAUTHORIZED", "Unauthorized");
    return req.platformUser;
  };
  // Only methods the catch-all route does not take land here (every path is routed): 405, as upstream.
  app.setNotFoundHandler((req, reply) =>
    fail(req, reply, (METHODS as readonly string[]).includes(req.method) ? notFound() : new PlatformError("METHOD_NOT_ALLOWED", `the server does not allow the method ${req.method}; use one of ${METHODS.join(", ")}`)),
  );
  if (o.auditor) app.addHook("onSend", auditResponse(o));
  // After the audit hook (hooks run in the order added), which records the body uncompressed.
  app.addHook("onSend", compressResponse);
  app.route({
    method: [...METHODS],
    url: "*",
    handler: async (req, reply) => {
      try {
        const result = await serve(req, reply, o, resources, userOf(req), timeouts);
        if (req.platformDeadline?.expired) postTimeout(req, o, undefined);
        return result;
      } catch (err) {
        if (req.platformDeadline?.expired) return postTimeout(req, o, err);
        if (reply.sent) {
          o.logger.error({ err, url: req.url }, "error after the response started");
          return;
        }
        return fail(req, reply, err);
      }
    },
  });
  return app;
}

/** What node's HTTP parser refuses, as the Status it is answered with (undefined: the client is gone, say nothing). */
function clientErrorStatus(err: NodeJS.ErrnoException): PlatformError | undefined {
  switch (err.code) {
    case "ECONNRESET":
    case "EPIPE":
      return undefined;
    case "HPE_HEADER_OVERFLOW":
      return new PlatformError("BAD_REQUEST", `the request line and headers are larger than the limit of ${MAX_HEADER_BYTES} bytes (64 KiB)`, { httpStatus: 431 });
    case "HPE_INVALID_METHOD":
      return new PlatformError("METHOD_NOT_ALLOWED", `the server does not allow this method; use one of ${METHODS.join(", ")}`);
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new PlatformError("BAD_REQUEST", "the request was not received in time", { httpStatus: 408 });
    default:
      return new PlatformError("BAD_REQUEST", `the request is not valid HTTP/1.1 (${err.code ?? "parse error"})`);
  }
}

const REASON_PHRASES: Readonly<Record<number, string>> = { 400: "Bad Request", 405: "Method Not Allowed", 408: "Request Timeout", 431: "Request Header Fields Too Large" };

/** Writes a Status answer on a socket whose request node could not parse, then closes it. */
function writeClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const error = clientErrorStatus(err);
  if (!error || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(statusOf(error));
  socket.end(
    `HTTP/1.1 ${error.httpStatus} ${REASON_PHRASES[error.httpStatus] ?? "Bad Request"}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

const notFound = () => new PlatformError("NOT_FOUND", "the server could not find the requested resource");

/** The work of a request answered 504 has ended: logged, as upstream's post-timeout activity, with how it ended. */
function postTimeout(req: FastifyRequest, o: HttpAppOptions, err: unknown): void {
  const lateMs = Date.now() - req.platformDeadline!.expiresAt;
  o.logger.warn({ method: req.method, url: req.url, lateMs, ...(err !== undefined && { err }) }, err === undefined ? "post-timeout activity: the request's work finished after its 504 answer" : "post-timeout activity: the request failed after its 504 answer");
}

async function serve(req: FastifyRequest, reply: FastifyReply, o: HttpAppOptions, resources: ResourceHandler, user: UserInfo, timeouts: RequestTimeouts): Promise<unknown> {
  const path = req.url.split("?")[0]!;
  const target = route(path, o.registry.catalog);
  if (!target) {
    await beginAudit(req, reply, o, { user, verb: req.method.toLowerCase(), resourceRequest: false, path });
    throw notFound();
  }
  if (target.type === "resource") {
    const watch = isWatch(req.method, req.query as RawQuery, target);
    const verb = verbOf(req.method, target, watch);
    req.platformTracker?.route(resourceLabels(req, target, verb));
    const attributes = resourceAttributes(path, target, verb, user);
    await beginAudit(req, reply, o, attributes);
    const deadline = watch ? undefined : deadlineOf(req, reply, timeouts);
    await authorize(o, { ...attributes, ...(deadline && { deadline }) }, req.platformAudit);
    // Only an authorized watch counts as a registered watcher.
    if (watch) {
      req.platformTracker?.longRunning(target.def.kind);
      await watchAudit(req, reply);
    }
    return resources.handle(req, reply, target, verb, user);
  }
  req.platformTracker?.route({ verb: req.method, dry_run: "", group: "", version: "", resource: "", subresource: "", scope: "", component: COMPONENT });
  await beginAudit(req, reply, o, { user, verb: req.method.toLowerCase(), resourceRequest: false, path });
  if (req.method !== "GET" && req.method !== "HEAD") throw new PlatformError("METHOD_NOT_ALLOWED", `the server does not allow ${req.method} on ${path}`);
  const deadline = deadlineOf(req, reply, timeouts);
  await authorize(o, { user, verb: "get", resourceRequest: false, path, deadline }, req.platformAudit);
  return serveNonResource(req, reply, target, o);
}

/**
 * Starts the deadline of a request that is not long-running (a bad `timeout` is a 400 here, before any work); the
 * response's close listener ends it.
 */
function deadlineOf(req: FastifyRequest, reply: FastifyReply, timeouts: RequestTimeouts): RequestDeadline {
  return (req.platformDeadline = timeouts.begin(req, reply, [(req.query as RawQuery).timeout].flat()[0]));
}

/** Upstream's request verbs as its metrics spell them. */
const METRIC_VERBS: Readonly<Record<string, string>> = { get: "GET", list: "LIST", watch: "WATCH", create: "POST", action: "POST", update: "PUT", patch: "PATCH", delete: "DELETE", deletecollection: "DELETECOLLECTION" };

/** The metric labels of a routed resource request (scope as upstream's CleanScope). */
function resourceLabels(req: FastifyRequest, target: Extract<Target, { type: "resource" }>, verb: string): RequestLabels {
  const apply = verb === "patch" && (req.headers["content-type"] ?? "").startsWith("application/apply-patch");
  const dryRun = (req.query as RawQuery).dryRun;
  return {
    verb: apply ? "APPLY" : (METRIC_VERBS[verb] ?? verb.toUpperCase()),
    dry_run: dryRun === undefined ? "" : [dryRun].flat().join(","),
    group: target.def.group,
    version: target.def.version,
    resource: target.def.plural,
    subresource: target.subresource ?? "",
    scope: target.name !== undefined || verb === "create" || verb === "action" ? "resource" : target.namespace !== undefined ? "namespace" : "cluster",
    component: COMPONENT,
  };
}

async function authorize(o: HttpAppOptions, attributes: Parameters<Pipeline["authorize"]>[0], audit: AuditContext | null): Promise<void> {
  const decision = await o.pipeline.authorize(attributes);
  if (audit) {
    // As upstream's authorization.k8s.io/decision and /reason, under this server's authorization group.
    const group = `authorization.${o.registry.names.suffix}`;
    audit.annotate(`${group}/decision`, decision.allowed ? "allow" : "forbid");
    if (decision.reason) audit.annotate(`${group}/reason`, decision.reason);
    // Which authorizer of a configured chain decided (upstream records it only in its logs).
    if (decision.authorizer) audit.annotate(`${group}/authorizer`, decision.authorizer);
  }
  if (!decision.allowed) throw forbiddenError(attributes, decision.reason);
}

function serveNonResource(req: FastifyRequest, reply: FastifyReply, target: Exclude<Target, { type: "resource" }>, o: HttpAppOptions): unknown {
  if (target.type === "openapiV2" || target.type === "openapiIndex" || target.type === "openapi") return serveOpenApi(req, reply, target, o.registry.catalog);
  const out = { negotiated: negotiate(req.headers.accept, false), pretty: isPretty(req.query as RawQuery), warnings: [] };
  const catalog = o.registry.catalog;
  switch (target.type) {
    case "health":
      return serveHealth(reply, target.check, target.name, req.query as RawQuery, { storage: o.registry.storage, ready: o.ready, ...(o.healthChecks && { checks: o.healthChecks }), readinessChecks: o.pipeline.readinessChecks?.() ?? [] });
    case "metrics":
      return o.metrics.scrape().then(({ contentType, body }) => reply.code(200).type(contentType).send(body));
    case "root":
      return send(reply, 200, { paths: ["/api", "/api/v1", "/apis", ...catalog.apiGroupList().groups.flatMap((g) => [`/apis/${g.name}`, ...g.versions.map((v) => `/apis/${v.groupVersion}`)]), "/healthz", "/livez", "/metrics", "/readyz", "/version"] }, out);
    case "version":
      return send(reply, 200, catalog.version(), out);
    case "apiVersions":
      return send(reply, 200, catalog.apiVersions(`${req.hostname}`), out);
    case "apiGroupList":
      return send(reply, 200, catalog.apiGroupList(), out);
    case "apiGroup":
      return send(reply, 200, catalog.apiGroup(target.group), out);
    case "resourceList":
      return send(reply, 200, catalog.resourceList(target.group, target.version), out);
  }
}

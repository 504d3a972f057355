// The request hooks of the audit: an event begun once a request is routed, refusals before routing (401, a refused
// impersonation), watches, and the final stage written before the response leaves.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { TLSSocket } from "node:tls";
import type { Status, UserInfo } from "../../api/meta.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { authenticatorOf, impersonatorOf, requesterOf, type Pipeline } from "../pipeline.js";
import { sourceIPs, type Auditor } from "../audit/auditor.js";
import type { AuditContext, AuditRequest } from "../audit/audit-context.js";
import { peerCertificateChain } from "../auth/authn-x509.js";
import type { Logger } from "../../logger.js";
import type { Registry } from "../registry/registry.js";
import { decodeBody, mediaType } from "./content.js";
import type { RawQuery } from "./query.js";
import { verbOf } from "./resource-verb.js";
import { resourceAttributes, isWatch, route } from "./routes.js";
import { statusOf } from "./status.js";

/** What the hooks use of the application's options. */
export interface AuditHookOptions {
  readonly auditor?: Auditor;
  readonly registry: Registry;
  readonly logger: Logger;
}

/**
 * Starts the request's audit once its attributes are known (after authentication, before authorization) and writes
 * RequestReceived; a sink that fails makes the request fail. Nothing is done without an auditor.
 */
export async function beginAudit(req: FastifyRequest, reply: FastifyReply, o: AuditHookOptions, a: Parameters<Pipeline["authorize"]>[0]): Promise<void> {
  if (!o.auditor) return;
  const ctx = o.auditor.begin(a, () => auditRequest(req, reply, a.user));
  if (!ctx) return;
  annotateAuthenticator(ctx, o, a.user);
  req.platformAudit = ctx;
  try {
    await ctx.received();
  } catch (err) {
    // As upstream: a request whose RequestReceived event cannot be stored is not carried out.
    ctx.rejected = true;
    o.auditor.rejected();
    throw new PlatformError("INTERNAL", "failed to store the audit event", { cause: err });
  }
}

/** What the audit records of the request beside its attributes. */
function auditRequest(req: FastifyRequest, reply: FastifyReply, user: UserInfo): AuditRequest {
  return {
    auditID: reply.raw.getHeader("Audit-Id") as string,
    requestURI: req.url,
    impersonator: impersonatorOf(user),
    userAgent: req.headers["user-agent"],
    sourceIPs: sourceIPs(headerText(req.headers["x-forwarded-for"]), headerText(req.headers["x-real-ip"]), req.socket.remoteAddress),
    body: Buffer.isBuffer(req.body) ? () => auditBody(req.body as Buffer, req.headers["content-type"]) : undefined,
  };
}

/** Which authenticator accepted the user: `authentication.<suffix>/authenticator` (x509, token-file, service-account, ...). */
function annotateAuthenticator(ctx: AuditContext, o: AuditHookOptions, user: UserInfo): void {
  const by = authenticatorOf(user);
  if (by === undefined) return;
  ctx.annotate(`${o.registry.names.authentication}/authenticator`, by.authenticator);
  if (by.issuer !== undefined) ctx.annotate(`${o.registry.names.authentication}/issuer`, by.issuer);
}

/** Upstream records a request that failed authentication with an empty user. */
const NO_USER = Object.freeze({}) as UserInfo;

/**
 * Audits a request refused before it was routed, as upstream: a failed authentication (401) as one ResponseStarted
 * event with no user and the methods tried; a refused impersonation (403) as the sender's request, completed by the
 * onSend hook with the answer. A failure to store these is counted; the request is refused anyway.
 */
export async function auditRefusal(req: FastifyRequest, reply: FastifyReply, o: AuditHookOptions, err: unknown): Promise<void> {
  const unauthorized = isPlatformError(err, "UNAUTHORIZED");
  const requester = unauthorized ? undefined : requesterOf(err);
  if (!unauthorized && !requester) return;
  const user = requester ?? NO_USER;
  const path = req.url.split("?")[0]!;
  let attributes: Parameters<Auditor["begin"]>[0] = { user, verb: req.method.toLowerCase(), resourceRequest: false, path };
  try {
    const target = route(path, o.registry.catalog);
    if (target?.type === "resource") attributes = resourceAttributes(path, target, verbOf(req.method, target, isWatch(req.method, req.query as RawQuery, target)), user);
  } catch {
    // A method no resource takes (405 once authenticated) or a bad query: recorded as a non-resource request.
  }
  const ctx = o.auditor!.begin(attributes, () => auditRequest(req, reply, user));
  if (!ctx) return;
  if (unauthorized) return ctx.failedAuthentication(authenticationAttempts(req)).catch(() => undefined);
  annotateAuthenticator(ctx, o, user);
  req.platformAudit = ctx;
  await ctx.received().catch(() => undefined);
}

/** Upstream's getAuthMethods: what the refused request presented. */
function authenticationAttempts(req: FastifyRequest): string {
  const methods: string[] = [];
  const scheme = /^\s*(\S+)\s+\S/.exec(String(req.headers.authorization ?? ""))?.[1]?.toLowerCase();
  if (scheme === "basic") methods.push("basic");
  if (scheme === "bearer") methods.push("bearer");
  if ((req.raw.socket as TLSSocket).encrypted && peerCertificateChain(req.raw.socket as TLSSocket).length > 0) methods.push("x509");
  return methods.length > 0 ? `Authentication failed, attempted: ${methods.join(", ")}` : "Authentication failed, no credentials provided";
}

/** A request body as the audit records it: patches (`…+json`, apply YAML) too, which the object decoder refuses. */
function auditBody(raw: Buffer, contentType: string | undefined): unknown {
  const type = mediaType(contentType);
  if (type.endsWith("+json")) return JSON.parse(raw.toString("utf8"));
  return decodeBody(raw, type === "application/apply-patch+yaml" ? "application/yaml" : contentType);
}

const headerText = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(",") : v);

/** A watch streams on the raw response: ResponseStarted now, ResponseComplete when the stream ends. */
export async function watchAudit(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const ctx = req.platformAudit;
  if (!ctx) return;
  await ctx.started(200);
  reply.raw.once("close", () => {
    // The stream is over: a failure is counted in apiserver_audit_error_total, there is no response left to fail.
    ctx.complete(reply.raw.statusCode, () => undefined).catch(() => undefined);
  });
}

/** The answer's JSON as the audit records it (read only at RequestResponse level or for a failure's Status). */
function responseBody(reply: FastifyReply, payload: unknown): unknown {
  if (!String(reply.getHeader("content-type") ?? "").includes("json") || (typeof payload !== "string" && !Buffer.isBuffer(payload))) return undefined;
  try {
    return JSON.parse(payload.toString());
  } catch {
    return undefined;
  }
}

/**
 * The onSend hook (only with an auditor): ResponseComplete (or Panic) before the body leaves, so a sink that fails
 * turns the answer into a 500 instead of an unrecorded success.
 */
export function auditResponse(o: AuditHookOptions) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    if (!req.platformAudit) return payload;
    const failed = await completeAudit(req, o, reply.statusCode, () => responseBody(reply, payload));
    if (!failed) return payload;
    reply.code(500).type("application/json");
    return JSON.stringify(failed);
  };
}

/**
 * Writes the request's ResponseComplete (if it is audited) for an answer with `code` about to leave. Resolves to the
 * 500 Status that replaces the answer when the sink failed, undefined once recorded.
 */
export async function completeAudit(req: FastifyRequest, o: AuditHookOptions, code: number, body: () => unknown): Promise<Status | undefined> {
  const ctx = req.platformAudit;
  if (!ctx) return undefined;
  try {
    await ctx.complete(code, body);
    return undefined;
  } catch (err) {
    o.logger.error({ err, url: req.url }, "the audit event could not be written; the request fails");
    if (!ctx.rejected) o.auditor!.rejected();
    return statusOf(new PlatformError("INTERNAL", "failed to store the audit event"));
  }
}

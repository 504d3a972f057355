// The audit Event (audit.<suffix>/v1): its shape, source IPs and user agent as upstream records them, and body redaction.
import { isIP } from "node:net";
import type { UserInfo } from "../api/meta.js";
import type { AuditLevel, AuditStage } from "../config/audit-policy.js";

export interface AuditObjectRef {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

export interface AuditResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  code: number;
}

export interface AuditEvent {
  kind: "Event";
  apiVersion: string;
  level: AuditLevel;
  auditID: string;
  stage: AuditStage;
  requestURI: string;
  verb: string;
  user: UserInfo;
  impersonatedUser?: UserInfo;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: AuditObjectRef;
  responseStatus?: AuditResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** Upstream's bound on a recorded User-Agent, and what marks a cut one. */
export const MAX_USER_AGENT = 1024;
const TRUNCATED = "...TRUNCATED";

export function auditUserAgent(ua: string | undefined): string | undefined {
  if (ua === undefined) return undefined;
  return ua.length > MAX_USER_AGENT ? ua.slice(0, MAX_USER_AGENT) + TRUNCATED : ua;
}

/** As upstream's SourceIPs: X-Forwarded-For entries, then X-Real-Ip, then the peer address unless it is already last. */
export function sourceIPs(forwardedFor: string | undefined, realIp: string | undefined, remote: string | undefined): string[] {
  const ips: string[] = [];
  for (const part of forwardedFor?.split(",") ?? []) {
    const ip = part.trim();
    if (isIP(ip)) ips.push(ip);
  }
  const real = realIp?.trim();
  if (real && isIP(real) && ips.at(-1) !== real) ips.push(real);
  const peer = remote?.startsWith("::ffff:") && isIP(remote.slice(7)) === 4 ? remote.slice(7) : remote;
  if (peer && ips.at(-1) !== peer) ips.push(peer);
  return ips;
}

export const REDACTED = "<redacted>";
const SENSITIVE_KINDS: ReadonlySet<string> = new Set(["Secret", "TokenRequest", "TokenReview"]);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Replaces each value of a string map by REDACTED (key names stay: which keys a Secret has is not secret). */
function redactValues(map: unknown): unknown {
  if (!isObject(map)) return map;
  return Object.fromEntries(Object.keys(map).map((k) => [k, REDACTED]));
}

/**
 * A body as the audit log may hold it: bearer tokens (TokenRequest `status.token`, TokenReview `spec.token`) and
 * Secret values (`data`, `stringData`) are replaced by REDACTED, in lists too; managed fields dropped when asked.
 * Upstream records them as they are; a CA's audit trail must not become a store of credentials.
 */
export function redactBody(body: unknown, omitManagedFields: boolean, kindHint?: string): unknown {
  // A JSON patch of a sensitive kind: every operation's value may be a credential.
  if (Array.isArray(body) && kindHint !== undefined && SENSITIVE_KINDS.has(kindHint)) return body.map((op) => (isObject(op) && "value" in op ? { ...op, value: REDACTED } : op));
  if (!isObject(body)) return body;
  const kind = typeof body.kind === "string" ? body.kind : kindHint;
  let out: Json = body;
  if (Array.isArray(body.items)) {
    const itemKind = kind?.endsWith("List") ? kind.slice(0, -4) : undefined;
    out = { ...out, items: body.items.map((i) => redactBody(i, omitManagedFields, itemKind)) };
  }
  if (kind === "Secret") out = { ...out, ...("data" in body && { data: redactValues(body.data) }), ...("stringData" in body && { stringData: redactValues(body.stringData) }) };
  if (kind === "TokenRequest" && isObject(body.status) && "token" in body.status) out = { ...out, status: { ...body.status, token: REDACTED } };
  if (kind === "TokenReview" && isObject(body.spec) && "token" in body.spec) out = { ...out, spec: { ...body.spec, token: REDACTED } };
  if (omitManagedFields && isObject(body.metadata) && "managedFields" in body.metadata) {
    const { managedFields: _m, ...metadata } = body.metadata;
    out = { ...out, metadata };
  }
  return out;
}

/** The kind a body of `resource`/`subresource` has when the client left `kind` out (redaction must not depend on it). */
export function bodyKind(resource: string | undefined, subresource: string | undefined): string | undefined {
  if (resource === "secrets" && !subresource) return "Secret";
  if (resource === "serviceaccounts" && subresource === "token") return "TokenRequest";
  if (resource === "tokenreviews") return "TokenReview";
  return undefined;
}

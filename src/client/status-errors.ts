// Maps what the server or the network said into PlatformError: by Status reason, then HTTP code, then socket code.
import type { Status, StatusCause } from "../api/meta.js";
import { PlatformError, type ErrorCause, type ErrorCode } from "../errors.js";

export interface CallContext {
  readonly method: string;
  /** Path and query, for messages. */
  readonly path: string;
}

const BY_REASON: Readonly<Record<string, ErrorCode>> = {
  NotFound: "NOT_FOUND",
  AlreadyExists: "ALREADY_EXISTS",
  Conflict: "CONFLICT",
  Invalid: "INVALID",
  Gone: "GONE",
  Expired: "GONE",
  Unauthorized: "UNAUTHORIZED",
  Forbidden: "FORBIDDEN",
  TooManyRequests: "TOO_MANY_REQUESTS",
  ServiceUnavailable: "STORAGE_UNAVAILABLE",
  InternalError: "INTERNAL",
  Timeout: "TIMEOUT",
  ServerTimeout: "TIMEOUT",
  BadRequest: "BAD_REQUEST",
  MethodNotAllowed: "METHOD_NOT_ALLOWED",
  NotAcceptable: "NOT_ACCEPTABLE",
  UnsupportedMediaType: "UNSUPPORTED_MEDIA_TYPE",
  RequestEntityTooLarge: "INPUT_TOO_LARGE",
};

const BY_HTTP: Readonly<Record<number, ErrorCode>> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  406: "NOT_ACCEPTABLE",
  409: "CONFLICT",
  410: "GONE",
  413: "INPUT_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "INVALID",
  429: "TOO_MANY_REQUESTS",
  500: "INTERNAL",
  503: "STORAGE_UNAVAILABLE",
  504: "TIMEOUT",
};

export function isStatus(value: unknown): value is Status {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "Status";
}

/** The error code for a Status reason and HTTP code: a known reason wins, then the code, then the code's class. */
export function codeFor(reason: string | undefined, httpStatus: number): ErrorCode {
  const byReason = reason ? BY_REASON[reason] : undefined;
  if (byReason) return byReason;
  return BY_HTTP[httpStatus] ?? (httpStatus >= 500 ? "INTERNAL" : "BAD_REQUEST");
}

/** Seconds from a Retry-After header (seconds or an HTTP date), else from Status details. */
export function retryAfterSeconds(header: string | string[] | undefined, status: Status | undefined, nowMs: number): number | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  if (text !== undefined && text.trim() !== "") {
    if (/^\d+$/.test(text.trim())) return Number(text.trim());
    const at = Date.parse(text);
    if (Number.isFinite(at)) return Math.max(0, Math.ceil((at - nowMs) / 1000));
  }
  const fromStatus = status?.details?.retryAfterSeconds;
  return typeof fromStatus === "number" && fromStatus >= 0 ? fromStatus : undefined;
}

/**
 * The error of a non-2xx response (or of a watch ERROR event). `body` is the decoded response body;
 * when it is a Status its message, causes and details are kept.
 */
export function errorFromResponse(httpStatus: number, body: unknown, ctx: CallContext, retryAfter?: number): PlatformError {
  const status = isStatus(body) ? body : undefined;
  const statusCode = status && typeof status.code === "number" && status.code >= 400 ? status.code : httpStatus;
  const code = codeFor(status?.reason, statusCode);
  const message = status?.message ?? `the server answered ${statusCode} to ${ctx.method} ${ctx.path}${snippet(body)}`;
  const causes = (status?.details?.causes ?? []).map(
    (c: StatusCause): ErrorCause => ({ message: c.message ?? c.reason ?? "", ...(c.reason ? { reason: c.reason } : {}), ...(c.field ? { field: c.field } : {}) }),
  );
  const details: Record<string, unknown> = { ...(status?.details ?? {}) };
  delete details.causes;
  if (retryAfter !== undefined) details.retryAfterSeconds = retryAfter;
  return new PlatformError(code, message, {
    httpStatus: statusCode,
    retryable: statusCode === 429 || statusCode >= 500,
    causes,
    details,
  });
}

function snippet(body: unknown): string {
  if (typeof body !== "string" || body.trim() === "") return "";
  const text = body.trim().replace(/\s+/g, " ");
  return `: ${text.length > 200 ? `${text.slice(0, 200)}…` : text}`;
}

/** Socket failures a retry can cure; ECONNREFUSED also proves the request was never sent. */
const TRANSIENT = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "EAI_AGAIN", "ECONNABORTED"]);
/** Failures before any byte of the request left: the server cannot have acted on it. */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN"]);

/** OpenSSL verification results of the server's certificate, and alerts that mean our certificate was refused. */
const VERIFY_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "CERT_SIGNATURE_FAILURE", "CERT_UNTRUSTED",
  "CERT_REJECTED", "INVALID_CA", "INVALID_PURPOSE", "ERR_TLS_CERT_ALTNAME_INVALID", "HOSTNAME_MISMATCH", "IP_ADDRESS_MISMATCH",
]);
const CLIENT_CERT_REFUSED = new Set([
  "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED", "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE", "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN", "ERR_SSL_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE", "ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED",
]);

/** Maps a socket or TLS failure of a call to `server`; `details.connectionError` carries the system code. */
export function connectionError(err: unknown, server: string, ctx: CallContext): PlatformError {
  const code = (err as NodeJS.ErrnoException | null)?.code ?? "";
  const reason = (err as Error | null)?.message ?? String(err);
  const details = { connectionError: code, sent: !NOT_SENT.has(code) && !VERIFY_CODES.has(code) && !CLIENT_CERT_REFUSED.has(code) };
  if (VERIFY_CODES.has(code)) {
    return new PlatformError(
      "TLS_VERIFY_FAILED",
      `cannot verify the certificate of ${server}: ${reason} (${code}); check the certificate authority ` +
        "(--certificate-authority, certificate-authority-data) and the server name (--tls-server-name)",
      { cause: err, details },
    );
  }
  if (CLIENT_CERT_REFUSED.has(code)) {
    // OpenSSL's text carries the alert name among internal detail ("...:tlsv13 alert certificate required:...").
    const alert = /alert ([a-z0-9 ]+?)(?::|$)/i.exec(reason)?.[1] ?? code;
    return new PlatformError("TLS_VERIFY_FAILED", `${server} refused the client certificate (TLS alert: ${alert}); check client-certificate and client-key`, {
      cause: err,
      details,
    });
  }
  const retryable = TRANSIENT.has(code);
  const what = code === "ECONNREFUSED" ? "connection refused" : code === "ENOTFOUND" ? "host not found" : reason;
  return new PlatformError("IO_ERROR", `${ctx.method} ${server}${ctx.path} failed: ${what}${code ? ` (${code})` : ""}`, {
    cause: err,
    retryable,
    details,
  });
}

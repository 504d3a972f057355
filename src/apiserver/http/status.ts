// Every error becomes a seed-style Status: PlatformError by its code, fastify's own errors by theirs, the rest 500.
import type { Status, StatusCause } from "../../api/meta.js";
import { ERROR_CODES, PlatformError, type ErrorCode } from "../../errors.js";

export const BODY_LIMIT_BYTES = 3 * 1024 * 1024;

/** Fastify error codes that are the client's fault, mapped to our codes. */
const FASTIFY_CODES: Readonly<Record<string, { code: ErrorCode; message: string }>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: "INPUT_TOO_LARGE", message: `the request body is larger than the limit of ${BODY_LIMIT_BYTES} bytes (3 MiB)` },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: "UNSUPPORTED_MEDIA_TYPE", message: "the body's media type is not supported; use application/json or application/yaml" },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: "BAD_REQUEST", message: "the request's Content-Length does not match its body" },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: "BAD_REQUEST", message: "the request body is empty; expected an object" },
  FST_ERR_BAD_URL: { code: "BAD_REQUEST", message: "the request URL is malformed" },
};

/** Converts anything thrown while serving into a PlatformError; `internal` reports whether it was unexpected. */
export function classify(err: unknown): { error: PlatformError; internal: boolean } {
  if (err instanceof PlatformError) return { error: err, internal: err.httpStatus >= 500 && err.code === "INTERNAL" };
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && FASTIFY_CODES[code]) {
    const m = FASTIFY_CODES[code]!;
    return { error: new PlatformError(m.code, m.message, { cause: err }), internal: false };
  }
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) {
    return { error: new PlatformError("BAD_REQUEST", (err as Error).message, { httpStatus: statusCode, cause: err }), internal: false };
  }
  return { error: new PlatformError("INTERNAL", "an internal error occurred; see the server log", { cause: err }), internal: true };
}

export function statusOf(error: PlatformError): Status {
  const d = error.details;
  const details: NonNullable<Status["details"]> = {};
  if (typeof d.name === "string") details.name = d.name;
  if (typeof d.group === "string") details.group = d.group;
  if (typeof d.kind === "string") details.kind = d.kind;
  if (typeof d.retryAfterSeconds === "number") details.retryAfterSeconds = d.retryAfterSeconds;
  if (error.causes.length > 0) {
    details.causes = error.causes.map((c): StatusCause => ({ ...(c.reason ? { reason: c.reason } : {}), message: c.message, ...(c.field ? { field: c.field } : {}) }));
  }
  const status: Status = {
    apiVersion: "v1",
    kind: "Status",
    metadata: {},
    status: "Failure",
    message: error.message,
    // A reason given with the error (not the code's) is kept; otherwise it follows the status actually sent.
    reason: error.httpStatus === ERROR_CODES[error.code].http || error.reasonGiven ? error.reason : reasonForHttp(error.httpStatus, error.reason),
    code: error.httpStatus,
  };
  if (Object.keys(details).length > 0) status.details = details;
  return status;
}

/** When a code's status is overridden, the reason follows the status actually sent. */
function reasonForHttp(http: number, fallback: string): string {
  for (const info of Object.values(ERROR_CODES)) if (info.http === http) return info.reason;
  return fallback;
}

// The one error class of the product: a stable code, the HTTP status it maps to, and whether a retry may help.
//
// Codes are listed in ERROR_CODES (grouped by area) and documented in docs/errors.md; a test keeps the
// two in step. Callers branch on `code` or `retryable`, never on message text.

export interface ErrorCodeInfo {
  /** HTTP status when the error crosses HTTP. */
  readonly http: number;
  /** Seed-style Status reason (NotFound, Invalid, ...). */
  readonly reason: string;
  /** Whether the same call may succeed later without a change of input. */
  readonly retryable: boolean;
}

const c = (http: number, reason: string, retryable = false): ErrorCodeInfo => ({ http, reason, retryable });

export const ERROR_CODES = {
  // --- generic ---
  INVALID_ARGUMENT: c(400, "BadRequest"),
  INVALID_OPTION: c(400, "BadRequest"),
  INTERNAL: c(500, "InternalError", true),
  NOT_READY: c(503, "ServiceUnavailable", true),
  IO_ERROR: c(500, "InternalError", true),
  TIMEOUT: c(504, "Timeout", true),

  // --- pki: encoding and parsing ---
  PEM_INVALID: c(400, "BadRequest"),
  PEM_LABEL: c(400, "BadRequest"),
  PEM_HEADERS: c(400, "BadRequest"),
  DER_INVALID: c(400, "BadRequest"),
  INPUT_TOO_LARGE: c(413, "RequestEntityTooLarge"),
  CSR_INVALID: c(400, "BadRequest"),
  CSR_SIGNATURE: c(400, "BadRequest"),
  KEY_UNSUPPORTED: c(400, "BadRequest"),
  KEY_TOO_WEAK: c(400, "BadRequest"),
  KEY_INVALID: c(400, "BadRequest"),
  KEY_MISMATCH: c(400, "BadRequest"),
  CERT_INVALID: c(400, "BadRequest"),
  USAGE_UNKNOWN: c(400, "BadRequest"),
  BUNDLE_INVALID: c(422, "Invalid"),

  // --- pki: issuance and CA material ---
  CA_EXPIRED: c(503, "ServiceUnavailable", true),
  CA_NOT_YET_VALID: c(503, "ServiceUnavailable", true),
  CA_INVALID: c(500, "InternalError", true),
  CA_NOT_A_CA: c(500, "InternalError"),
  LIFETIME_INVALID: c(400, "BadRequest"),

  // --- pki: CA keys in a PKCS#11 token ---
  HSM_URI_INVALID: c(400, "BadRequest"),
  HSM_UNAVAILABLE: c(500, "InternalError"),
  HSM_LOGIN_FAILED: c(500, "InternalError"),
  HSM_KEY_NOT_FOUND: c(500, "InternalError"),
  HSM_ERROR: c(500, "InternalError", true),

  // --- signers ---
  SIGNER_UNKNOWN: c(404, "NotFound"),
  SIGNER_DUPLICATE: c(409, "AlreadyExists"),
  SIGNER_REJECTED: c(403, "Forbidden"),
  SIGNER_NOT_READY: c(503, "ServiceUnavailable", true),
  POLICY_INVALID: c(400, "BadRequest"),
  PLUGIN_INVALID: c(400, "BadRequest"),

  // --- configuration files ---
  CONFIG_INVALID: c(400, "BadRequest"),
  MANIFEST_INVALID: c(400, "BadRequest"),

  // --- CEL expressions in configuration files ---
  CEL_INVALID: c(400, "BadRequest"),
  CEL_EVALUATION: c(422, "Invalid"),

  // --- API client ---
  TLS_VERIFY_FAILED: c(502, "BadGateway"),
  CREDENTIALS_UNAVAILABLE: c(401, "Unauthorized"),

  // --- API server and storage ---
  NOT_FOUND: c(404, "NotFound"),
  ALREADY_EXISTS: c(409, "AlreadyExists"),
  CONFLICT: c(409, "Conflict"),
  INVALID: c(422, "Invalid"),
  BAD_REQUEST: c(400, "BadRequest"),
  METHOD_NOT_ALLOWED: c(405, "MethodNotAllowed"),
  NOT_ACCEPTABLE: c(406, "NotAcceptable"),
  UNSUPPORTED_MEDIA_TYPE: c(415, "UnsupportedMediaType"),
  GONE: c(410, "Expired"),
  UNAUTHORIZED: c(401, "Unauthorized"),
  FORBIDDEN: c(403, "Forbidden"),
  TOO_MANY_REQUESTS: c(429, "TooManyRequests", true),
  STORAGE_UNAVAILABLE: c(503, "ServiceUnavailable", true),
  PATCH_INVALID: c(422, "Invalid"),
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** One field-level cause, as in a Status `details.causes` entry. */
export interface ErrorCause {
  readonly reason?: string;
  readonly message: string;
  readonly field?: string;
}

export interface PlatformErrorOptions {
  readonly causes?: readonly ErrorCause[];
  readonly cause?: unknown;
  /** Overrides the code's default HTTP status (e.g. 409 for a create that conflicts). */
  readonly httpStatus?: number;
  /** Overrides the code's default retryability. */
  readonly retryable?: boolean;
  /** Overrides the Status reason (a remote party's own, such as an admission webhook's `status.reason`). */
  readonly reason?: string;
  /** Free-form details for Status.details (name, kind, group). */
  readonly details?: Readonly<Record<string, unknown>>;
}

/** Marks a PlatformError whichever copy of this module made it (the bundled `sign` command, a plug-in's import). */
const BRAND = Symbol.for("platform-ca.PlatformError");

export class PlatformError extends Error {
  /**
   * `instanceof` by brand, not by prototype: `platform-ca sign` runs from one bundled file while a signer plug-in
   * imports the package's own modules, and the error a plug-in throws must still be read as ours.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly reason: string;
  /** Whether `reason` was given (kept whatever the HTTP status), rather than the code's. */
  readonly reasonGiven: boolean;
  readonly retryable: boolean;
  readonly causes: readonly ErrorCause[];
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, options: PlatformErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const info = ERROR_CODES[code];
    this.name = "PlatformError";
    this.code = code;
    this.httpStatus = options.httpStatus ?? info.http;
    this.reason = options.reason || info.reason;
    this.reasonGiven = Boolean(options.reason);
    this.retryable = options.retryable ?? info.retryable;
    this.causes = options.causes ?? [];
    this.details = options.details ?? {};
  }
}
Object.defineProperty(PlatformError.prototype, BRAND, { value: true });

export function isPlatformError(value: unknown, code?: ErrorCode): value is PlatformError {
  return value instanceof PlatformError && (code === undefined || value.code === code);
}

/** A code that crossed a thread or process boundary as text, when it is one of ours; else `fallback`. */
export function asErrorCode(code: string, fallback: ErrorCode): ErrorCode {
  return code in ERROR_CODES ? (code as ErrorCode) : fallback;
}

/** Wraps anything thrown into a PlatformError, keeping typed errors as they are. */
export function toPlatformError(value: unknown, fallback: ErrorCode = "INTERNAL"): PlatformError {
  if (value instanceof PlatformError) return value;
  const message = value instanceof Error ? value.message : String(value);
  return new PlatformError(fallback, message, { cause: value });
}

/** The one shape of option-validation messages: expected `name` ≥ 600, got 300. */
export function invalidOption(name: string, expectation: string, got: unknown): PlatformError {
  return new PlatformError("INVALID_OPTION", `expected \`${name}\` ${expectation}, got ${formatValue(got)}`);
}

function formatValue(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v === undefined) return "nothing";
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

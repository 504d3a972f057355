// Shared validators of resource strategies: field paths, field errors, name rules, data keys, base64, times.
import { Buffer } from "node:buffer";
import { PlatformError } from "../../errors.js";
import { invalid, type FieldError } from "../../api/field-errors.js";
import { DNS1123_SUBDOMAIN_MAX, qualifiedNameProblem } from "../../api/names.js";
import { rfc3339 } from "../../time/rfc3339.js";

// --- field paths ---

/** `spec` + `usages` → `spec.usages`; the root path is "". */
export function child(path: string, name: string): string {
  return path === "" ? name : `${path}.${name}`;
}

export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}

/** Map entries as upstream prints them: `data[tls.crt]`. */
export function key(path: string, k: string): string {
  return `${path}[${k}]`;
}

// --- field errors: the API's own builders, re-exported for the strategies ---

export { duplicate, forbidden, immutable, invalid, notSupported, required, show, tooLong, typeInvalid } from "../../api/field-errors.js";

/**
 * Field errors for a PlatformError thrown by a parser (one per cause with its reason, else its message), showing `placeholder`
 * instead of the bytes; anything else thrown reads "cannot be parsed".
 */
export function errorsFromCauses(field: string, placeholder: string, err: unknown): FieldError[] {
  if (!(err instanceof PlatformError)) return [invalid(field, placeholder, "cannot be parsed")];
  if (err.causes.length === 0) return [invalid(field, placeholder, err.message)];
  return err.causes.map((c) => ({ ...invalid(field, placeholder, c.message), ...(isFieldReason(c.reason) ? { reason: c.reason } : {}) }));
}

const FIELD_REASONS: readonly string[] = ["FieldValueRequired", "FieldValueInvalid", "FieldValueForbidden", "FieldValueDuplicate", "FieldValueNotSupported", "FieldValueTooLong", "FieldValueTypeInvalid"];

function isFieldReason(reason: string | undefined): reason is FieldError["reason"] {
  return reason !== undefined && FIELD_REASONS.includes(reason);
}

// --- name rules: the API's own (src/api/names.ts), so the registry and the signers answer alike ---

export { DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, dns1123LabelProblem, dns1123SubdomainProblem, labelValueProblem, MAX_SIGNER_NAME, pathSegmentProblem, qualifiedNameProblem, validateSignerName } from "../../api/names.js";
/** Seconds-precision RFC 3339, as Time fields are written. */
export const formatTime = rfc3339;

/** Errors of `value` under a name rule, at `field`. */
export function validateNameRule(field: string, value: string, problem: (v: string) => string | undefined): FieldError[] {
  const why = problem(value);
  return why ? [invalid(field, value, why)] : [];
}

/** A qualified name (`[dns-subdomain/]name`) as finalizers, label keys and reportingController use. */
export function validateQualifiedName(field: string, value: string): FieldError[] {
  return validateNameRule(field, value, qualifiedNameProblem);
}

// --- data keys (Secret, ConfigMap) ---

const CONFIG_KEY_RE = /^[-._a-zA-Z0-9]+$/;

/** Why `k` is not a valid Secret/ConfigMap data key, or undefined. */
export function configKeyProblem(k: string): string | undefined {
  if (k.length > DNS1123_SUBDOMAIN_MAX) return `must be no more than ${DNS1123_SUBDOMAIN_MAX} characters`;
  if (!CONFIG_KEY_RE.test(k)) return "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
  if (k === "." || k === "..") return `must not be '${k}'`;
  if (k.startsWith("..")) return "must not start with '..'";
  return undefined;
}

// --- encodings and times ---

/**
 * The characters of standard base64 with at most two `=` at the end; with a length that is a whole number of quanta,
 * that is padded base64. One character-class run: a group repeated per quantum made the regular expression engine
 * keep a backtracking entry per quantum, its stack growing with the text (a CSR or a certificate at every write).
 */
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Bytes of standard, padded base64 (as JSON carries []byte; line breaks tolerated), or undefined when it is not. */
export function decodeBase64(text: string): Buffer | undefined {
  // Line breaks are rare: the text is copied without them only when it has some.
  const compact = text.includes("\n") || text.includes("\r") ? text.replace(/[\r\n]/g, "") : text;
  return compact.length % 4 === 0 && BASE64_RE.test(compact) ? Buffer.from(compact, "base64") : undefined;
}

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/**
 * Timestamps that passed lately. Objects carry the same few (their creation, managedFields' and conditions' times,
 * mostly the current second), each checked at every write: a hit skips the pattern and the calendar check.
 */
const RECENT_TIMES = new Set<string>();
const RECENT_TIMES_MAX = 256;

/** Whether `text` is an RFC 3339 timestamp of a real calendar time (Time and MicroTime both accept fractions on input). */
export function isRfc3339(text: string): boolean {
  if (RECENT_TIMES.has(text)) return true;
  if (!calendarTime(text)) return false;
  // Cleared when full: the times in use come back at once, and a set of this size is never walked.
  if (RECENT_TIMES.size >= RECENT_TIMES_MAX) RECENT_TIMES.clear();
  RECENT_TIMES.add(text);
  return true;
}

function calendarTime(text: string): boolean {
  const m = RFC3339_RE.exec(text);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  // Date.UTC rolls 31 February over into March; a real date survives the round trip unchanged.
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && at.getUTCHours() === h && at.getUTCMinutes() === mi && at.getUTCSeconds() === s;
}


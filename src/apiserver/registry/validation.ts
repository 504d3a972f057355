// Shared validators of resource strategies: field error builders, name rules, the signerName rule, data keys, base64, times.
import { Buffer } from "node:buffer";
import { PlatformError } from "../../errors.js";
import type { FieldError } from "./strategy.js";
import { nameProblem, rfc3339 } from "./metadata.js";
import { labelValueProblem, qualifiedNameProblem } from "../selectors.js";

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

// --- field errors (message bodies as upstream's field.Error.ErrorBody) ---

const MAX_SHOWN = 128;

/** A value as error messages show it: strings quoted, long values cut. */
export function show(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value);
  else if (value === undefined) text = "null";
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

const withDetail = (head: string, detail?: string): string => (detail ? `${head}: ${detail}` : head);

export function required(field: string, detail?: string): FieldError {
  return { field, reason: "FieldValueRequired", message: withDetail("Required value", detail) };
}

export function invalid(field: string, value: unknown, detail: string): FieldError {
  return { field, reason: "FieldValueInvalid", message: `Invalid value: ${show(value)}: ${detail}` };
}

export function forbidden(field: string, detail: string): FieldError {
  return { field, reason: "FieldValueForbidden", message: `Forbidden: ${detail}` };
}

export function duplicate(field: string, value: unknown): FieldError {
  return { field, reason: "FieldValueDuplicate", message: `Duplicate value: ${show(value)}` };
}

export function notSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  const list = supported.map((s) => JSON.stringify(s)).join(", ");
  return { field, reason: "FieldValueNotSupported", message: `Unsupported value: ${show(value)}: supported values: ${list}` };
}

export function tooLong(field: string, max: number, unit = "bytes"): FieldError {
  return { field, reason: "FieldValueTooLong", message: `Too long: may not be more than ${max} ${unit}` };
}

export function typeInvalid(field: string, value: unknown, type: string): FieldError {
  return { field, reason: "FieldValueTypeInvalid", message: `Invalid value: ${show(value)}: must be of type ${type}` };
}

/** The one message of every immutability rule. */
export function immutable(field: string, value: unknown): FieldError {
  return invalid(field, value, "field is immutable");
}

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

// --- name rules (the registry's rules, reused so both layers answer alike) ---

export const DNS1123_LABEL_MAX = 63;
export const DNS1123_SUBDOMAIN_MAX = 253;

export const dns1123LabelProblem = (value: string): string | undefined => nameProblem("dns-label", value);
export const dns1123SubdomainProblem = (value: string): string | undefined => nameProblem("dns-subdomain", value);
export const pathSegmentProblem = (value: string): string | undefined => nameProblem("path-segment", value);
export { labelValueProblem, qualifiedNameProblem };
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

// --- signerName: `<domain>/<path>`, as upstream's ValidateSignerName ---

const MAX_PATH_SEGMENT = DNS1123_SUBDOMAIN_MAX + DNS1123_LABEL_MAX + 1;
export const MAX_SIGNER_NAME = DNS1123_SUBDOMAIN_MAX + MAX_PATH_SEGMENT + 1;

/**
 * A signer name is one `/` between a domain of at least two DNS labels and a path of DNS subdomains joined by
 * dots, so that `<fqdn>/<namespace>.<name>` fits.
 */
export function validateSignerName(field: string, signerName: string): FieldError[] {
  if (signerName.length === 0) return [required(field)];
  const segments = signerName.split("/");
  if (segments.length !== 2) {
    return [invalid(field, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")];
  }
  const [domain, path] = segments as [string, string];
  const errors: FieldError[] = [];
  if (domain.length > DNS1123_SUBDOMAIN_MAX) errors.push(tooLong(field, DNS1123_SUBDOMAIN_MAX));
  const labels = domain.split(".");
  for (const label of labels) {
    const why = dns1123LabelProblem(label);
    if (why) {
      // Later labels would only repeat the same complaint.
      errors.push(invalid(field, domain, `validating label ${JSON.stringify(label)}: ${why}`));
      break;
    }
  }
  if (labels.length < 2) errors.push(invalid(field, domain, "should be a domain with at least two segments separated by dots"));
  for (const component of path.split(".")) {
    const why = dns1123SubdomainProblem(component);
    if (why) {
      errors.push(invalid(field, path, `validating component ${JSON.stringify(component)}: ${why}`));
      break;
    }
  }
  if (signerName.length > MAX_SIGNER_NAME) errors.push(tooLong(field, MAX_SIGNER_NAME));
  return errors;
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

const BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Bytes of standard, padded base64 (as JSON carries []byte; line breaks tolerated), or undefined when it is not. */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/[\r\n]/g, "");
  return BASE64_RE.test(compact) ? Buffer.from(compact, "base64") : undefined;
}

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/** Whether `text` is an RFC 3339 timestamp of a real calendar time (Time and MicroTime both accept fractions on input). */
export function isRfc3339(text: string): boolean {
  const m = RFC3339_RE.exec(text);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  // Date.UTC rolls 31 February over into March; a real date survives the round trip unchanged.
  const at = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d && at.getUTCHours() === h && at.getUTCMinutes() === mi && at.getUTCSeconds() === s;
}


// CertificateSigningRequest field rules: the request, signerName, usages, lifetime, conditions and the issued certificate.
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import type { CertificateSigningRequestCondition, CertificateSigningRequestSpec, CertificateSigningRequestStatus } from "../../../api/types/csr.js";
import { CONDITION_STATUSES, TERMINAL_CONDITION_TYPES, type CsrConditionType } from "../../../api/conditions.js";
import { parseCsr } from "../../../pki/csr.js";
import { verifyAhead } from "../../../pki/verify-ahead.js";
import { decodeSinglePem } from "../../../pki/pem.js";
import { findDuplicateUsages, isKnownUsage, KNOWN_USAGES } from "../../../pki/usages.js";
import { validateIssuedCertificate } from "../../../pki/bundle.js";
import { MIN_EXPIRATION_SECONDS } from "../../../pki/validity.js";
import type { FieldError } from "../strategy.js";
import { decodeBase64, duplicate, errorsFromCauses, forbidden, formatTime, index, invalid, notSupported, required, validateSignerName } from "../validation.js";
import { deepEqual, isRecord } from "./strategy-kit.js";
import { copyPlain } from "../../../plain-data.js";


export interface CsrView {
  readonly spec?: Partial<CertificateSigningRequestSpec>;
  readonly status?: CertificateSigningRequestStatus;
}

export const view = (obj: ApiObject): CsrView => obj as CsrView;
/** The conditions list, or [] when absent or not a list (type checks report that). */
export function conditionsOf(obj: ApiObject): CertificateSigningRequestCondition[] {
  const status = view(obj).status;
  return isRecord(status) && Array.isArray(status.conditions) ? status.conditions : [];
}

/** The DER checkRequestAhead decoded from the text of an object's spec.request. */
interface ReadAhead {
  readonly request: string;
  readonly der: Uint8Array;
}

/** What checkRequestAhead read, by object: validation reads that text again without decoding it. */
const readAhead = new WeakMap<ApiObject, ReadAhead>();

function validateRequest(request: string | undefined, ahead: ReadAhead | undefined): FieldError[] {
  const field = "spec.request";
  if (!request) return [required(field)];
  if (ahead?.request === request) return requestErrors(() => parseCsr(ahead.der));
  const bytes = decodeBase64(request);
  if (!bytes) return [invalid(field, "<request data>", "must be the base64 encoding of a PEM CERTIFICATE REQUEST block")];
  // Only the `CERTIFICATE REQUEST` label, as upstream; parseCsr alone would also take DER and the legacy label.
  return requestErrors(() => parseCsr(decodeSinglePem(bytes.toString("latin1"), "CERTIFICATE REQUEST").der));
}

function requestErrors(parse: () => unknown): FieldError[] {
  try {
    parse();
    return [];
  } catch (err) {
    return errorsFromCauses("spec.request", "<request data>", err);
  }
}

/**
 * The request's signature checked on another core before validation reads it (verifyAhead); undefined when the field
 * is not a PEM request, which validation then reports.
 */
export function checkRequestAhead(obj: ApiObject): Promise<void> | undefined {
  const request = view(obj).spec?.request;
  if (typeof request !== "string" || request === "") return undefined;
  const bytes = decodeBase64(request);
  if (!bytes) return undefined;
  let der: Uint8Array;
  try {
    der = decodeSinglePem(bytes.toString("latin1"), "CERTIFICATE REQUEST").der;
  } catch {
    return undefined;
  }
  readAhead.set(obj, { request, der });
  return verifyAhead(der);
}

function validateUsages(usages: readonly string[]): FieldError[] {
  const errors: FieldError[] = [];
  usages.forEach((u, i) => {
    if (!isKnownUsage(u)) errors.push(notSupported(index("spec.usages", i), u, KNOWN_USAGES));
  });
  for (const dup of findDuplicateUsages(usages)) {
    errors.push(duplicate(index("spec.usages", usages.indexOf(dup, usages.indexOf(dup) + 1)), dup));
  }
  return errors;
}

export function validateSpec(obj: ApiObject, names: GroupNames): FieldError[] {
  const spec = view(obj).spec;
  if (!spec) return [required("spec")];
  const errors = [...validateRequest(spec.request, readAhead.get(obj)), ...validateUsages(spec.usages ?? [])];
  const signerName = spec.signerName ?? "";
  if (signerName === names.signers.legacyUnknown) {
    errors.push(invalid("spec.signerName", signerName, "the legacy signerName is not allowed via this API version"));
  } else {
    errors.push(...validateSignerName("spec.signerName", signerName));
  }
  if (spec.expirationSeconds !== undefined && spec.expirationSeconds < MIN_EXPIRATION_SECONDS) {
    errors.push(invalid("spec.expirationSeconds", spec.expirationSeconds, `may not specify a duration less than ${MIN_EXPIRATION_SECONDS} seconds (10 minutes)`));
  }
  return errors;
}

const isTerminal = (type: string): type is CsrConditionType => (TERMINAL_CONDITION_TYPES as readonly string[]).includes(type);

/** Per-condition rules and the rules across conditions: one per type, Approved ⟂ Denied. */
export function validateConditions(conditions: readonly CertificateSigningRequestCondition[]): FieldError[] {
  const errors: FieldError[] = [];
  const seen = new Set<string>();
  let approved = false;
  let denied = false;
  conditions.forEach((c, i) => {
    const at = index("status.conditions", i);
    if (!c.type) errors.push(required(`${at}.type`));
    const allowed = isTerminal(c.type) ? ["True"] : CONDITION_STATUSES;
    if (!c.status) errors.push(required(`${at}.status`));
    else if (!allowed.includes(c.status)) errors.push(notSupported(`${at}.status`, c.status, allowed));
    if ((c.type === "Approved" && denied) || (c.type === "Denied" && approved)) {
      errors.push(invalid(`${at}.type`, c.type, "Approved and Denied conditions are mutually exclusive"));
    }
    approved ||= c.type === "Approved";
    denied ||= c.type === "Denied";
    if (seen.has(c.type)) errors.push(duplicate(`${at}.type`, c.type));
    seen.add(c.type);
  });
  return errors;
}

/** A certificate is valid PEM per the seed and is only issued to an Approved request that is neither Denied nor Failed. */
export function validateCertificate(obj: ApiObject): FieldError[] {
  const certificate = view(obj).status?.certificate;
  if (!certificate) return [];
  const field = "status.certificate";
  const types = new Set(conditionsOf(obj).map((c) => c.type));
  if (!types.has("Approved") || types.has("Denied") || types.has("Failed")) {
    return [forbidden(field, "a certificate may only be set on a request that is Approved and neither Denied nor Failed")];
  }
  const bytes = decodeBase64(certificate);
  if (!bytes) return [invalid(field, "<certificate data>", "must be the base64 encoding of PEM CERTIFICATE blocks")];
  try {
    validateIssuedCertificate(bytes.toString("latin1"));
    return [];
  } catch (err) {
    return errorsFromCauses(field, "<certificate data>", err);
  }
}

const ofType = (obj: ApiObject, type: string) => conditionsOf(obj).filter((c) => isRecord(c) && c.type === type);

export interface TransitionRules {
  /** Terminal condition types this write may add (others may be neither added nor changed). */
  readonly mayAdd: readonly CsrConditionType[];
  readonly maySetCertificate: boolean;
}

/** Rules on the change from `previous` to `next`: no removal, no unauthorised addition, the certificate set once. */
export function validateTransition(next: ApiObject, previous: ApiObject, rules: TransitionRules): FieldError[] {
  const errors: FieldError[] = [];
  for (const type of TERMINAL_CONDITION_TYPES) {
    const before = ofType(previous, type);
    const after = ofType(next, type);
    if (after.length < before.length) errors.push(forbidden("status.conditions", `updates may not remove a condition of type "${type}"`));
    else if (!rules.mayAdd.includes(type)) {
      if (after.length > before.length) errors.push(forbidden("status.conditions", `updates may not add a condition of type "${type}"`));
      else if (!deepEqual(after, before)) errors.push(forbidden("status.conditions", `updates may not modify a condition of type "${type}"`));
    }
  }
  const cert = view(next).status?.certificate ?? "";
  const oldCert = view(previous).status?.certificate ?? "";
  if (cert !== oldCert) {
    if (!rules.maySetCertificate) errors.push(forbidden("status.certificate", "updates may not set certificate content"));
    else if (oldCert !== "") errors.push(forbidden("status.certificate", "updates may not modify existing certificate content"));
  }
  return errors;
}

/**
 * Copies the stored instances of `type` onto `next` when their number is unchanged, so a writer working on a
 * stale copy cannot alter them; additions and removals are left for validation to refuse.
 */
export function preserveConditions(next: ApiObject, previous: ApiObject, type: CsrConditionType): void {
  const before = ofType(previous, type);
  const conditions = conditionsOf(next);
  const at = conditions.flatMap((c, i) => (isRecord(c) && c.type === type ? [i] : []));
  if (at.length !== before.length) return;
  at.forEach((i, n) => {
    conditions[i] = copyPlain(before[n]!);
  });
}

/** lastUpdateTime defaults to now; lastTransitionTime is kept from a stored condition of the same type and status, else now. */
export function populateConditionTimestamps(next: ApiObject, previous: ApiObject | undefined, now: Date): void {
  const stamp = formatTime(now);
  const old = previous ? conditionsOf(previous) : [];
  for (const c of conditionsOf(next)) {
    // Runs before type checks: leave malformed entries for validation to report.
    if (!isRecord(c)) continue;
    if (!c.lastUpdateTime) c.lastUpdateTime = stamp;
    if (!c.lastTransitionTime) {
      const same = old.find((o) => o.type === c.type && o.status === c.status && o.lastTransitionTime);
      c.lastTransitionTime = same?.lastTransitionTime ?? stamp;
    }
  }
}

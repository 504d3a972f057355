// Validity window of an issued certificate: requested lifetime, cluster maximum, 5-minute backdate, CA bounds.
import { invalidOption, PlatformError } from "../errors.js";
import type { Validity } from "./types.js";

/** Clock skew allowance: certificates start this long before the signing time. */
export const BACKDATE_SECONDS = 5 * 60;
/** Below this lifetime the backdate is extra validity; from it on, notAfter moves back by the backdate. */
export const SHORT_LIFETIME_SECONDS = 8 * 60 * 60;
/** The smallest `expirationSeconds` a request may carry (seed: 10 minutes). */
export const MIN_EXPIRATION_SECONDS = 600;

export interface ValidityRequest {
  readonly now: Date;
  /** spec.expirationSeconds; absent means "the signer's maximum". */
  readonly expirationSeconds?: number;
  /** The cluster-wide maximum signing duration (ClusterSigningDuration). */
  readonly maxDurationSeconds: number;
  readonly caNotBefore: Date;
  readonly caNotAfter: Date;
}

/**
 * The platform's reference behaviour:
 * ttl = min(expirationSeconds ?? max, max); notBefore = now − 5 min; notAfter = now + ttl for ttl < 8 h, else
 * now + ttl − 5 min (the reported duration of long certificates then equals the request); notAfter is clamped
 * to the CA's NotAfter. Times are truncated to whole seconds, as DER stores them.
 */
export function computeValidity(request: ValidityRequest): Validity {
  const { now, expirationSeconds, maxDurationSeconds, caNotBefore, caNotAfter } = request;
  checkDate("now", now);
  checkDate("caNotBefore", caNotBefore);
  checkDate("caNotAfter", caNotAfter);
  checkLifetime("maxDurationSeconds", maxDurationSeconds);
  if (expirationSeconds !== undefined) checkLifetime("expirationSeconds", expirationSeconds);

  const nowMs = now.getTime();
  if (nowMs >= caNotAfter.getTime()) {
    throw new PlatformError("CA_EXPIRED", `the CA certificate expired at ${caNotAfter.toISOString()}; replace the CA files`);
  }
  if (nowMs < caNotBefore.getTime()) {
    throw new PlatformError("CA_NOT_YET_VALID", `the CA certificate is not valid before ${caNotBefore.toISOString()}`);
  }
  const ttl = expirationSeconds === undefined ? maxDurationSeconds : Math.min(expirationSeconds, maxDurationSeconds);
  const notBefore = nowMs - BACKDATE_SECONDS * 1000;
  const notAfter = nowMs + (ttl < SHORT_LIFETIME_SECONDS ? ttl : ttl - BACKDATE_SECONDS) * 1000;
  return {
    notBefore: new Date(floorSecond(notBefore)),
    notAfter: new Date(floorSecond(Math.min(notAfter, caNotAfter.getTime()))),
  };
}

function floorSecond(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}

function checkDate(name: string, value: Date): void {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw invalidOption(name, "to be a valid Date", String(value));
}

function checkLifetime(name: string, seconds: number): void {
  if (typeof seconds !== "number" || !Number.isSafeInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS) {
    const message = invalidOption(name, `to be an integer ≥ ${MIN_EXPIRATION_SECONDS}`, seconds).message;
    throw new PlatformError("LIFETIME_INVALID", message);
  }
}

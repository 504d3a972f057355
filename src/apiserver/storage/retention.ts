// How much history a backend keeps: a revision is compacted once it is more than N revisions or T ms old.
import { invalidOption } from "../../errors.js";

export interface RetentionOptions {
  /** Keep at least the last N revisions readable (list at a revision, watch from a revision). */
  readonly revisions?: number;
  /** Compact revisions written longer than this ago (Infinity or undefined: no age limit). */
  readonly ageMs?: number;
}

export interface Retention {
  readonly revisions: number;
  readonly ageMs: number;
}

export function resolveRetention(options: RetentionOptions | undefined, defaults: Retention, name = "retention"): Retention {
  const revisions = options?.revisions ?? defaults.revisions;
  const ageMs = options?.ageMs ?? defaults.ageMs;
  if (!(Number.isSafeInteger(revisions) && revisions >= 1) && revisions !== Infinity) {
    throw invalidOption(`${name}.revisions`, "to be an integer ≥ 1", revisions);
  }
  if (!(typeof ageMs === "number" && ageMs >= 1000)) {
    throw invalidOption(`${name}.ageMs`, "≥ 1000", ageMs);
  }
  return { revisions, ageMs };
}

/** The revision the revision-count rule allows compacting up to. */
export function revisionTarget(retention: Retention, current: number): number {
  return retention.revisions === Infinity ? 0 : current - retention.revisions;
}

/** How often, at most, the age rule is evaluated: a tenth of the window, between 1 s and 1 min. */
export function ageCheckInterval(retention: Retention): number {
  return Math.min(60_000, Math.max(1000, retention.ageMs / 10));
}

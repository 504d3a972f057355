// Allowed SubjectAccessReview answers, reused for a short time: many node agents join with one bootstrap identity.
import type { SubjectAccessReviewSpec } from "../../api/types/authorization.js";
import { invalidOption } from "../../errors.js";

/** How long an allowed answer is reused when nothing is configured (as the controller manager's delegated authorizer). */
export const DEFAULT_REVIEW_CACHE_TTL_MS = 10_000;

/** Entries kept at most; the oldest goes first. */
const MAX_ENTRIES = 4096;

/**
 * Remembers which review specs were allowed, until `ttlMs` after the answer. Refusals are never kept, so a
 * permission granted after a refusal counts at the next retry; a permission taken away stops counting after
 * at most `ttlMs`. With `ttlMs` 0 nothing is kept.
 */
export class AllowedReviewCache {
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** Key → when the answer came (ms of `now`), in insertion order. */
  readonly #entries = new Map<string, number>();

  constructor(ttlMs: number, now: () => number) {
    if (!Number.isFinite(ttlMs) || ttlMs < 0) throw invalidOption("review cache TTL", "to be a duration ≥ 0", ttlMs);
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  /** True when the same question was allowed less than the TTL ago. */
  allowed(spec: SubjectAccessReviewSpec): boolean {
    if (this.#ttlMs === 0) return false;
    const key = reviewKey(spec);
    const at = this.#entries.get(key);
    if (at === undefined) return false;
    // A clock set back counts as expired too, so a wall-clock jump cannot stretch the TTL.
    const age = this.#now() - at;
    if (age >= 0 && age < this.#ttlMs) return true;
    this.#entries.delete(key);
    return false;
  }

  /** Records an allowed answer to `spec`. */
  remember(spec: SubjectAccessReviewSpec): void {
    if (this.#ttlMs === 0) return;
    const key = reviewKey(spec);
    this.#entries.delete(key);
    this.#entries.set(key, this.#now());
    if (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** The whole question: who (user, uid, groups as a set, extra) may do what; two specs share a key only when they ask the same. */
function reviewKey(s: SubjectAccessReviewSpec): string {
  const extra = Object.entries(s.extra ?? {})
    .map(([k, v]) => [k, [...v].sort()] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([s.user ?? null, s.uid ?? null, [...new Set(s.groups ?? [])].sort(), extra, s.resourceAttributes ?? null, s.nonResourceAttributes ?? null]);
}

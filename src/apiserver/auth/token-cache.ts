// Upstream's token success cache: a bearer token that authenticated is remembered for 10 s, by its SHA-256 only, and
// forgotten at once when an object it stands for changes.
import { createHash, hash } from "node:crypto";
import type { LRUCache } from "lru-cache";
import type { UserInfo } from "../../api/meta.js";
import type { Clock } from "../../time/clock.js";
import { ttlCache } from "../../time/ttl-cache.js";
import { frozenUser, type CheckedAgainst } from "./identity.js";

/**
 * How long a token that authenticated stays authenticated without being checked again: kube-apiserver's
 * TokenSuccessCacheTTL (10 s; failures are not remembered). A client sends the same token with every request, and a
 * check costs a signature (ServiceAccount tokens, JWTs) or reads of storage (the ServiceAccount, Pod or Secret a token
 * stands for). Upstream's price, a deleted ServiceAccount's tokens working for up to 10 s more, is not paid here when
 * the server tells the cache of changes to those objects (`forget`).
 */
export const TOKEN_SUCCESS_CACHE_TTL_MS = 10_000;
/** Tokens remembered at once; the least recently used goes first. */
const TOKEN_CACHE_ENTRIES = 10_000;

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest("base64");
/** The lookup key of a token: its SHA-256 in base64 (one-shot crypto.hash where node has it, Node ≥ 20.12). */
export const tokenKey = (token: string): string => (typeof hash === "function" ? hash("sha256", token, "base64") : digest(token));

/** Successes of one set of authenticators; `T` is what they answer (a user, and what else the caller records). */
export class TokenSuccessCache<T extends { readonly user: UserInfo }> {
  readonly #clock: Pick<Clock, "now">;
  readonly #entries: LRUCache<string, { readonly result: T; readonly dependsOn: readonly string[] }>;
  /** Token keys by the object they depend on. */
  readonly #dependents = new Map<string, Set<string>>();
  #epoch = 0;

  constructor(clock: Pick<Clock, "now">) {
    this.#clock = clock;
    // However an entry goes (expired, pushed out, forgotten), its objects stop pointing at it.
    this.#entries = ttlCache(TOKEN_CACHE_ENTRIES, clock, (entry, key) => {
      for (const dep of entry.dependsOn) {
        const keys = this.#dependents.get(dep);
        keys?.delete(key);
        if (keys?.size === 0) this.#dependents.delete(dep);
      }
    });
  }

  /** What the token (by `tokenKey`) authenticated as within the last 10 s, or undefined. */
  get(key: string): T | undefined {
    return this.#entries.get(key)?.result;
  }

  /**
   * Counts the changes told so far: read before a token is checked and handed to `remember`, it keeps a success
   * checked against an object that changed meanwhile from being remembered.
   */
  get epoch(): number {
    return this.#epoch;
  }

  /**
   * Remembers a success for 10 s, never past `validUntil`, unless an object changed since `epoch`. Returns the
   * result as every later request of the token gets it: its user frozen, since one object is then shared by them all.
   */
  remember(key: string, result: T, how: CheckedAgainst, epoch: number): T {
    const shared: T = { ...result, user: frozenUser(result.user) };
    // An entry is still read `ttl` ms after it was set (stale only past that), and a token is refused at `validUntil`
    // itself: so one millisecond less.
    const ttl = Math.min(TOKEN_SUCCESS_CACHE_TTL_MS, (how.validUntil ?? Infinity) - 1 - this.#clock.now());
    if (ttl <= 0 || epoch !== this.#epoch) return shared;
    const dependsOn = how.dependsOn ?? [];
    this.#entries.set(key, { result: shared, dependsOn }, { ttl });
    for (const dep of dependsOn) {
      let keys = this.#dependents.get(dep);
      if (!keys) this.#dependents.set(dep, (keys = new Set()));
      keys.add(key);
    }
    return shared;
  }

  /** An object (`<plural>/<namespace>/<name>`) was written or deleted: the tokens checked against it are checked again. */
  forget(object: string): void {
    this.#epoch++;
    const keys = this.#dependents.get(object);
    if (keys) for (const key of [...keys]) this.#entries.delete(key);
  }

  /** Forgets every token (the changes can no longer be followed). */
  forgetAll(): void {
    this.#epoch++;
    this.#entries.clear();
  }
}

// Leases for keys written with a time to live, as upstream's etcd3 lease manager hands them out: one lease serves
// the writes of a short window (5% of the TTL, at most a minute, at most 1,000 keys), granted with that window added
// to its TTL, so a burst of Events costs one LeaseGrant rather than one each and no key outlives its TTL by more
// than the window.
import type { Clock } from "../../../time/clock.js";

/** Upstream's --lease-reuse-duration-seconds default and its share of the TTL. */
const REUSE_MAX_SECONDS = 60;
const REUSE_SHARE = 0.05;
/** Upstream's default limit of keys attached to one lease. */
const MAX_KEYS_PER_LEASE = 1000;

/** Grants a lease of `ttlSeconds` and answers its ID (decimal: IDs use all 64 bits). */
export type GrantLease = (ttlSeconds: number) => Promise<string>;

interface Held {
  readonly id: string;
  /** When the lease ends (ms), by this process's clock, from the time the grant was asked for (it ends later). */
  readonly expires: number;
  /** The TTL it was granted with. */
  readonly seconds: number;
  keys: number;
}

export class LeaseManager {
  readonly #grant: GrantLease;
  readonly #clock: Clock;
  #held: Held | undefined;
  /** A grant in flight, shared by the writes that arrive meanwhile. */
  #granting: Promise<Held> | undefined;

  constructor(grant: GrantLease, clock: Clock) {
    this.#grant = grant;
    this.#clock = clock;
  }

  /** A lease that lasts at least `ttlSeconds` from now and at most the reuse window more. */
  async lease(ttlSeconds: number): Promise<string> {
    for (;;) {
      const now = this.#clock.now();
      const reuse = Math.min(REUSE_MAX_SECONDS, Math.floor(REUSE_SHARE * ttlSeconds));
      const held = this.#held;
      if (held && held.expires > now + ttlSeconds * 1000 && held.expires <= now + (ttlSeconds + reuse) * 1000 && held.keys < MAX_KEYS_PER_LEASE) {
        held.keys++;
        return held.id;
      }
      if (!this.#granting) {
        const granting = this.#grant(ttlSeconds + reuse).then((id) => ({ id, expires: now + (ttlSeconds + reuse) * 1000, seconds: ttlSeconds + reuse, keys: 0 }));
        this.#granting = granting;
        granting.then(
          (h) => {
            this.#held = h;
            if (this.#granting === granting) this.#granting = undefined;
          },
          () => {
            if (this.#granting === granting) this.#granting = undefined;
          },
        );
      }
      const granted = await this.#granting;
      // etcd counts a lease's TTL from the grant, which came after this write asked: one of at least this TTL serves
      // it. A write that waited on a shorter one, or on one now full, asks again.
      if (granted.seconds >= ttlSeconds && granted.keys < MAX_KEYS_PER_LEASE) {
        granted.keys++;
        return granted.id;
      }
    }
  }

  /** Forgets the held lease (etcd no longer knows it: revoked, or lost with the cluster's data). */
  forget(id: string): void {
    if (this.#held?.id === id) this.#held = undefined;
  }
}

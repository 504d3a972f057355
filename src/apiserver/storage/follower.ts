// Keeps an in-memory view of one storage prefix current: lists it, then follows its watch from the listed revision,
// and lists again (after a pause) when the watch breaks or a list fails. The server's own RBAC and revocation caches use it.
import type { CancelTimer, Clock } from "../../time/clock.js";
import type { KeyValue, Storage, StorageEvent, Watch } from "./types.js";

export interface StorageFollowerOptions {
  readonly storage: Storage;
  readonly prefix: string;
  readonly clock: Clock;
  /** Wait before listing again after a failed list or a broken watch. */
  readonly retryMs: number;
  /** The prefix's whole content: at start, and again after every relist (the view replaces what it held). */
  reset(items: readonly KeyValue[]): void;
  /** One change after the listed revision. */
  apply(event: StorageEvent): void;
  /**
   * The watch after a list has replayed what was written since it: from now on every commit reaches `apply` before
   * its writer hears of it (on a store that delivers as it commits). Once per list.
   */
  caughtUp?(): void;
  /** The watch broke or a relist failed: the view is stale until the next reset, which follows after `retryMs`. */
  broken(err: unknown): void;
}

export class StorageFollower {
  readonly #o: StorageFollowerOptions;
  #watch: Watch | undefined;
  #cancelRetry: CancelTimer | undefined;
  #running = false;

  constructor(options: StorageFollowerOptions) {
    this.#o = options;
  }

  /** Resolves once the first list is applied; rejects (and stops) when it fails. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      await this.#sync(true);
    } catch (err) {
      this.stop();
      throw err;
    }
  }

  stop(): void {
    this.#running = false;
    this.#watch?.cancel();
    this.#watch = undefined;
    this.#cancelRetry?.();
    this.#cancelRetry = undefined;
  }

  async #sync(initial = false): Promise<void> {
    const o = this.#o;
    this.#watch?.cancel();
    this.#watch = undefined;
    try {
      const { items, revision } = await o.storage.list(o.prefix);
      if (!this.#running) return;
      o.reset(items);
      let caughtUp = o.caughtUp === undefined;
      const onProgress = () => {
        if (caughtUp) return;
        caughtUp = true;
        o.caughtUp!();
      };
      this.#watch = o.storage.watch(o.prefix, { fromRevision: revision, ...(o.caughtUp && { onProgress }) }, (event) => o.apply(event), (err) => this.#retry(err));
    } catch (err) {
      if (initial) throw err;
      this.#retry(err);
    }
  }

  #retry(err: unknown): void {
    if (!this.#running) return;
    this.#o.broken(err);
    if (this.#cancelRetry !== undefined) return;
    this.#cancelRetry = this.#o.clock.setTimer(this.#o.retryMs, () => {
      this.#cancelRetry = undefined;
      void this.#sync();
    });
  }
}

/** Followers of several prefixes that start and stop together, as one cache of them does. */
export class FollowerGroup {
  readonly #followers: readonly StorageFollower[];
  #running = false;

  constructor(followers: readonly StorageFollower[]) {
    this.#followers = followers;
  }

  /**
   * Starts every follower (stopped again when `signal` aborts); resolves true once all first lists are applied, false
   * when the group was already started; rejects, with every follower stopped, when a first list fails.
   */
  async start(signal?: AbortSignal): Promise<boolean> {
    if (this.#running) return false;
    this.#running = true;
    signal?.addEventListener("abort", () => this.stop(), { once: true });
    try {
      await Promise.all(this.#followers.map((f) => f.start()));
      return true;
    } catch (err) {
      this.stop();
      throw err;
    }
  }

  stop(): void {
    this.#running = false;
    for (const f of this.#followers) f.stop();
  }
}

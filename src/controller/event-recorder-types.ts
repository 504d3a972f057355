// What an event recorder is given and reports: its options and the outcome of each write.
import type { Event } from "../api/types/event.js";
import type { ResourceClient } from "../client/types.js";
import type { Logger } from "../logger.js";
import type { JitteredBackoffOptions } from "../time/backoff.js";
import type { Clock } from "../time/clock.js";

/**
 * What became of one write: `dropped` when the queue was full and the event was not recorded; `throttled` when the
 * server answered 429 (the event is queued again, first in line, and written once the pause is over).
 */
export type EventResult = "written" | "failed" | "dropped" | "throttled";

export interface EventRecorderOptions {
  /** Client for Events (all namespaces: the recorder names the namespace on every write). */
  readonly client: ResourceClient<Event>;
  readonly reportingController: string;
  /** This replica, at most 128 characters. */
  readonly reportingInstance: string;
  readonly groupSuffix?: string;
  /** Repeats within this time of the previous one extend a series (default 6 min). */
  readonly seriesWindowMs?: number;
  /** Series and rate-limit entries kept, least recently used dropped first (default 4096). */
  readonly cacheSize?: number;
  /** Per regarding object: `burst` events, then `qps` per second (default 25 and 1/300); false disables. */
  readonly rateLimit?: { readonly burst: number; readonly qps: number } | false;
  /** Event writes in flight at once, across all series (default 4). */
  readonly maxInFlight?: number;
  /**
   * True while the work the events are about has a backlog (the controllers' queues hold keys waiting for a worker).
   * Events then yield: at most `maxInFlightWhileBusy` writes run, so they do not compete with that work for the
   * client and the server, and the queue drains at the full `maxInFlight` once the backlog is gone.
   */
  readonly busy?: () => boolean;
  /** Event writes in flight at once while `busy()` (default 1, at most `maxInFlight`): events are delayed, never stopped. */
  readonly maxInFlightWhileBusy?: number;
  /** Series waiting for a writer (default 50,000); past it a new series is dropped, repeats still fold. */
  readonly maxQueued?: number;
  /**
   * A batch window: the first event after a quiet period waits this long (default 0) for others, then the writers
   * drain everything queued, so the server's group commit takes the batch in few transactions and log flushes.
   */
  readonly batchDelayMs?: number;
  /** Pause after a 429 without Retry-After: exponential from 1 s up to 30 s, jittered (options for tests). */
  readonly throttleBackoff?: JitteredBackoffOptions;
  /** Called once per write (`written`, `failed`, `throttled`) and per event dropped because the queue was full. */
  readonly onResult?: (result: EventResult) => void;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

// The controller runtime in one import: clock, work queue, informer, runner, leader election, event recorder.
export { FakeClock, realClock, settle, type CancelTimer, type Clock } from "./clock.js";
export {
  ItemExponentialBackoff,
  JitteredBackoff,
  TokenBucket,
  type ItemBackoffOptions,
  type JitteredBackoffOptions,
  type RateLimiter,
} from "./backoff.js";
export { WorkQueue, type WorkQueueMetrics, type WorkQueueOptions } from "./workqueue.js";
export { Informer, objectKey, type InformerHandlers, type InformerOptions, type Lister } from "./informer.js";
export {
  enqueueHandlers,
  isTerminal,
  markTerminal,
  Runner,
  type EnqueueOptions,
  type RunnerOptions,
  type RunnerStopResult,
  type SyncFn,
} from "./runner.js";
export { JITTER_FACTOR, LeaderElector, type LeaderCallbacks, type LeaderElectorOptions } from "./leader-election.js";
export { EventRecorder, EVENT_NOTE_LIMIT_BYTES, EVENT_TEXT_LIMIT, truncateBytes, type EventRecorderOptions } from "./event-recorder.js";

// The deadline of one request, as upstream's WithRequestDeadline: the `timeout` query parameter, capped at the server's
// --request-timeout (60 s by default), carried into the webhooks the request calls so their waits cannot sum past it.
import { PlatformError } from "../../errors.js";
import { parseDuration } from "../../fields/duration.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";

/** Upstream's --request-timeout default, and the cap of a request's own `timeout`. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** The longest request timeout taken: a day, well inside what one timer can wait (24.8 days). */
export const MAX_REQUEST_TIMEOUT_MS = 86_400_000;

/** The reason a request's deadline carries: webhook callers name it in their failure messages. */
export class RequestDeadlineExceeded extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the request's deadline (timeout ${timeoutMs / 1000}s) passed`);
    this.name = "RequestDeadlineExceeded";
  }
}

/** What the webhooks of a request see of its deadline: a signal that aborts when the request's time is up. */
export interface Deadline {
  readonly signal: AbortSignal;
}

/**
 * A request's deadline. Its signal is made on first read, with a timer for the time left: most requests call no
 * webhook, and an AbortSignal costs a few microseconds to make. `expire()` ends it early (the server's sweep of
 * requests in flight); `onExpire` hears of the end once, whichever ended it.
 */
export class RequestDeadline implements Deadline {
  readonly expiresAt: number;
  #controller: AbortController | undefined;
  #cancelTimer: CancelTimer | undefined;
  #expired = false;

  constructor(
    readonly timeoutMs: number,
    private readonly clock: Clock = systemClock,
    private readonly onExpire?: () => void,
  ) {
    this.expiresAt = clock.now() + timeoutMs;
  }

  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = (this.#controller = new AbortController());
    const left = this.expiresAt - this.clock.now();
    if (this.#expired) controller.abort(new RequestDeadlineExceeded(this.timeoutMs));
    else if (left <= 0) this.expire();
    else this.#cancelTimer = this.clock.setTimer(left, () => this.expire());
    return controller.signal;
  }

  get expired(): boolean {
    return this.#expired;
  }

  /**
   * The time is up: tells `onExpire` (the server answers 504), then aborts the signal if one was asked for, so what
   * waited on it (a webhook call) carries on only after the answer is settled; once.
   */
  expire(): void {
    if (this.#expired) return;
    this.#expired = true;
    this.cancel();
    this.onExpire?.();
    this.#controller?.abort(new RequestDeadlineExceeded(this.timeoutMs));
  }

  /** The request is over: its timer, if it has one, is dropped. */
  cancel(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }
}

/**
 * Milliseconds a request may take: its `timeout` parameter, or the cap. A `timeout` that is not a duration is
 * upstream's 400; 0, a negative one or one above the cap means the cap.
 */
export function requestTimeoutMs(timeout: unknown, capMs: number = DEFAULT_REQUEST_TIMEOUT_MS): number {
  if (timeout === undefined || timeout === "") return capMs;
  const given = typeof timeout === "string" ? parseDuration(timeout) : undefined;
  if (given === undefined) throw new PlatformError("BAD_REQUEST", "invalid timeout specified in the request URL");
  return given > 0 && given < capMs ? given : capMs;
}

/** The deadline of a request with this `timeout` parameter; undefined for a long-running request (a watch), as upstream. */
export function requestDeadline(timeout: unknown, longRunning: boolean, clock: Clock = systemClock, capMs: number = DEFAULT_REQUEST_TIMEOUT_MS): RequestDeadline | undefined {
  return longRunning ? undefined : new RequestDeadline(requestTimeoutMs(timeout, capMs), clock);
}

/**
 * One call's signal: aborted by its own timeout or by the request's deadline, whichever comes first (the call's
 * timeout is min(its own, what remains of the request's)). `why()` says which one ended it, for the failure message.
 */
export function callDeadline(clock: Clock, timeoutMs: number, request: AbortSignal | undefined): { readonly signal: AbortSignal; readonly why: () => string | undefined; readonly cancel: () => void } {
  const own = new AbortController();
  const cancel = clock.setTimer(timeoutMs, () => own.abort(new Error(`no answer within the timeout (${timeoutMs} ms)`)));
  const signal = request ? AbortSignal.any([own.signal, request]) : own.signal;
  return {
    signal,
    why: () => (signal.aborted ? ((signal.reason as Error)?.message ?? "aborted") : undefined),
    cancel,
  };
}

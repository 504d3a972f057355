// The deadline of one request, as upstream's WithRequestDeadline: the `timeout` query parameter, capped at the server's
// request timeout (60 s), carried as an AbortSignal into the webhooks the request calls so their waits cannot sum past it.
import { PlatformError } from "../../errors.js";
import { parseDuration } from "../../fields/duration.js";
import { systemClock, type Clock } from "../../time/clock.js";

/** Upstream's --request-timeout default, and the cap of a request's own `timeout`. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** The reason a request's deadline carries: webhook callers name it in their failure messages. */
export class RequestDeadlineExceeded extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the request's deadline (timeout ${timeoutMs / 1000}s) passed`);
    this.name = "RequestDeadlineExceeded";
  }
}

/**
 * The signal that aborts when the request's time is up; undefined for a long-running request (a watch), which has no
 * deadline, as upstream. A `timeout` that is not a duration is upstream's 400; 0, a negative one or one above the cap
 * means the cap.
 */
export function requestDeadline(timeout: unknown, longRunning: boolean, clock: Clock = systemClock, capMs: number = DEFAULT_REQUEST_TIMEOUT_MS): { readonly signal: AbortSignal; readonly cancel: () => void } | undefined {
  if (longRunning) return undefined;
  let ms = capMs;
  if (timeout !== undefined && timeout !== "") {
    const given = typeof timeout === "string" ? parseDuration(timeout) : undefined;
    if (given === undefined) throw new PlatformError("BAD_REQUEST", "invalid timeout specified in the request URL");
    if (given > 0 && given < capMs) ms = given;
  }
  const controller = new AbortController();
  const cancel = clock.setTimer(ms, () => controller.abort(new RequestDeadlineExceeded(ms)));
  return { signal: controller.signal, cancel };
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

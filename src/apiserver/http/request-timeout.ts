// Upstream's WithTimeoutForNonLongRunningRequests: a request still unanswered when its deadline passes is answered
// 504 Timeout while its work goes on. One coarse sweep over the requests in flight finds them, not a timer each.
import type { FastifyReply, FastifyRequest } from "fastify";
import { PlatformError } from "../../errors.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import { RequestDeadline, requestTimeoutMs } from "../webhook/deadline.js";
import { completeAudit, type AuditHookOptions } from "./audit-hooks.js";
import { statusOf } from "./status.js";

/** Upstream's answer: apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0). */
export const TIMEOUT_MESSAGE = "Timeout: request did not complete within the allotted timeout";

/**
 * How often the requests in flight are looked at: one without a webhook is answered at most this long after its
 * deadline. A request that asked for its deadline's signal (a webhook call) is answered on the dot by that signal's timer.
 */
export const SWEEP_MS = 100;

/** The deadlines of the requests in flight, and the one timer that runs while there are any. */
export class RequestTimeouts {
  readonly #inFlight = new Set<RequestDeadline>();
  #sweeping: CancelTimer | undefined;

  constructor(
    /** --request-timeout: the default and the cap of a request's `timeout`. */
    readonly capMs: number,
    private readonly onTimeout: (req: FastifyRequest, reply: FastifyReply, deadline: RequestDeadline) => void,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The deadline of a request with this `timeout` parameter (not a duration: a 400), until end() or its expiry. */
  begin(req: FastifyRequest, reply: FastifyReply, timeout: unknown): RequestDeadline {
    const deadline: RequestDeadline = new RequestDeadline(requestTimeoutMs(timeout, this.capMs), this.clock, () => {
      this.#inFlight.delete(deadline);
      this.onTimeout(req, reply, deadline);
    });
    this.#inFlight.add(deadline);
    this.#sweeping ??= this.clock.setTimer(SWEEP_MS, this.#sweep);
    return deadline;
  }

  /** The response is over. */
  end(deadline: RequestDeadline): void {
    this.#inFlight.delete(deadline);
    deadline.cancel();
  }

  /** Stops the sweep (the server closes). */
  stop(): void {
    this.#sweeping?.();
    this.#sweeping = undefined;
  }

  readonly #sweep = (): void => {
    this.#sweeping = undefined;
    const now = this.clock.now();
    for (const deadline of this.#inFlight) if (deadline.expiresAt <= now) deadline.expire();
    // Idle, the server has no timer running; the next request starts one.
    if (this.#inFlight.size > 0) this.#sweeping = this.clock.setTimer(SWEEP_MS, this.#sweep);
  };
}

/**
 * Answers a request whose deadline passed, unless it is answered already or its client left: 504 with upstream's
 * Status, recorded by the audit like any other answer. From here on the handler's own answer is dropped, as
 * upstream's timeout writer drops it; its work (a write to storage, say) goes on and may still take effect.
 */
export function answerTimeout(req: FastifyRequest, reply: FastifyReply, o: AuditHookOptions): void {
  const res = reply.raw;
  // An answer whose audit is being written is on its way: it goes out as it is.
  if (res.headersSent || res.destroyed || req.platformAudit?.completed) return;
  silence(reply);
  req.platformTracker?.terminated(504, req.method);
  const status = statusOf(new PlatformError("TIMEOUT", TIMEOUT_MESSAGE));
  completeAudit(req, o, status.code, () => status).then((failed) => {
    if (res.headersSent || res.destroyed) return;
    const answer = failed ?? status;
    res.writeHead(answer.code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(answer));
  }, (err: unknown) => o.logger.error({ err, url: req.url }, "the timeout answer could not be written"));
}

/** What a handler does to its reply. */
const REPLY_METHODS = ["send", "code", "status", "header", "headers", "type", "removeHeader", "redirect", "hijack"] as const;

/** Makes the reply deaf to its handler: whatever it sets or sends later is dropped. */
function silence(reply: FastifyReply): void {
  const ignored = () => reply;
  for (const method of REPLY_METHODS) Object.defineProperty(reply, method, { value: ignored, configurable: true });
}

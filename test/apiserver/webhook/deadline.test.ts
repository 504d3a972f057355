// A request's deadline: its signal made only when asked for (and then aborted on time), ended once whichever way,
// dropped with the response; the server's sweep finds the expired requests in flight without a timer each.
import type { FastifyReply, FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { RequestTimeouts, SWEEP_MS } from "../../../src/apiserver/http/request-timeout.js";
import { RequestDeadline } from "../../../src/apiserver/webhook/deadline.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

describe("RequestDeadline", () => {
  it("asked for its signal, aborts it at the deadline and tells the server once", async () => {
    const clock = new FakeClock();
    let told = 0;
    const d = new RequestDeadline(3000, clock, () => told++);
    await clock.advance(1000);
    const signal = d.signal;
    expect(d.signal).toBe(signal);
    await clock.advance(1999);
    expect([signal.aborted, told]).toEqual([false, 0]);
    await clock.advance(1);
    expect([signal.aborted, (signal.reason as Error).message, told, d.expired]).toEqual([true, "the request's deadline (timeout 3s) passed", 1, true]);
    d.expire();
    expect(told).toBe(1);
  });

  it("ended by the sweep before anyone asked, hands out a signal already aborted", () => {
    const clock = new FakeClock();
    let told = 0;
    const d = new RequestDeadline(500, clock, () => told++);
    d.expire();
    expect(told).toBe(1);
    expect(d.signal.aborted).toBe(true);
    expect(told).toBe(1);
  });

  it("cancelled with its response, neither aborts nor tells", async () => {
    const clock = new FakeClock();
    let told = 0;
    const d = new RequestDeadline(1000, clock, () => told++);
    const signal = d.signal;
    d.cancel();
    await clock.advance(5000);
    expect([signal.aborted, told]).toEqual([false, 0]);
  });
});

describe("RequestTimeouts", () => {
  const req = {} as FastifyRequest;
  const reply = {} as FastifyReply;

  it("finds an expired request at the next sweep, once, and leaves an ended one alone", async () => {
    const clock = new FakeClock();
    const timedOut: RequestDeadline[] = [];
    const timeouts = new RequestTimeouts(60_000, (_req, _reply, d) => timedOut.push(d), clock);
    const slow = timeouts.begin(req, reply, "250ms");
    const done = timeouts.begin(req, reply, "250ms");
    const capped = timeouts.begin(req, reply, "2h");
    expect([slow.timeoutMs, capped.timeoutMs]).toEqual([250, 60_000]);
    timeouts.end(done);
    await clock.advance(2 * SWEEP_MS);
    expect(timedOut).toEqual([]);
    await clock.advance(SWEEP_MS);
    expect(timedOut).toEqual([slow]);
    await clock.advance(60_000);
    expect(timedOut).toEqual([slow, capped]);
    timeouts.stop();
  });

  it("refuses a `timeout` that is not a duration with upstream's 400", () => {
    const timeouts = new RequestTimeouts(60_000, () => undefined, new FakeClock());
    expect(() => timeouts.begin(req, reply, "soon")).toThrow("invalid timeout specified in the request URL");
  });
});

// The token bucket under a fake clock: burst first, then qps; unlimited; aborted waits.
import { describe, expect, it } from "vitest";
import { TokenBucket } from "../../src/time/token-bucket.js";
import { FakeClock } from "../../src/time/fake-clock.js";

/** Starts `count` acquisitions and reports, after each clock step, how many have been granted. */
function tracker(bucket: TokenBucket, count: number, signal?: AbortSignal) {
  const granted: number[] = [];
  const all = Array.from({ length: count }, (_, i) => bucket.acquire(signal).then(() => granted.push(i)));
  return { granted, all };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function bucket(qps: number, burst: number) {
  const clock = new FakeClock();
  return { clock, bucket: new TokenBucket({ qps, burst, clock }) };
}

describe("token bucket rate limiter", () => {
  it("grants the burst at once, then one token per 1/qps seconds", async () => {
    const { clock, bucket: b } = bucket(2, 3);
    const t = tracker(b, 5);
    await flush();
    expect(t.granted).toEqual([0, 1, 2]);
    clock.tick(499);
    await flush();
    expect(t.granted).toHaveLength(3);
    clock.tick(1);
    await flush();
    expect(t.granted).toEqual([0, 1, 2, 3]);
    clock.tick(500);
    await flush();
    expect(t.granted).toEqual([0, 1, 2, 3, 4]);
  });

  it("refills up to the burst and no further while idle", async () => {
    const { clock, bucket: b } = bucket(10, 4);
    await tracker(b, 4).all;
    clock.tick(60_000);
    const t = tracker(b, 6);
    await flush();
    expect(t.granted).toHaveLength(4);
    clock.tick(100);
    await flush();
    expect(t.granted).toHaveLength(5);
  });

  it.each([0, -1])("is unlimited with qps %i", async (qps) => {
    const { bucket: b } = bucket(qps, 0);
    const t = tracker(b, 1000);
    await flush();
    expect(t.granted).toHaveLength(1000);
    expect(b.tryAcquire()).toBe(true);
  });

  it("gives the token of an aborted wait back to the next caller", async () => {
    const { clock, bucket: b } = bucket(1, 1);
    await b.acquire();
    const abort = new AbortController();
    const waiting = b.acquire(abort.signal);
    abort.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
    expect(clock.pendingTimers()).toBe(0);
    const t = tracker(b, 1);
    clock.tick(999);
    await flush();
    expect(t.granted).toEqual([]);
    clock.tick(1);
    await flush();
    expect(t.granted).toEqual([0]);
  });

  it("refuses at once when the signal is already aborted", async () => {
    const { bucket: b } = bucket(1, 1);
    await expect(b.acquire(AbortSignal.abort(new Error("gone")))).rejects.toThrow("gone");
    expect(b.tryAcquire()).toBe(true);
  });

  it("takes a token with tryAcquire only when one is there", () => {
    const { clock, bucket: b } = bucket(1, 2);
    expect([b.tryAcquire(), b.tryAcquire(), b.tryAcquire()]).toEqual([true, true, false]);
    clock.tick(1000);
    expect([b.tryAcquire(), b.tryAcquire()]).toEqual([true, false]);
  });

  it.each([
    [{ qps: 5, burst: 0 }, "expected `burst` to be an integer ≥ 1 when qps > 0, got 0"],
    [{ qps: 5, burst: 1.5 }, "expected `burst` to be an integer ≥ 1 when qps > 0, got 1.5"],
    [{ qps: Number.NaN, burst: 1 }, "expected `qps` to be a number (≤ 0 for unlimited), got null"],
  ])("refuses options %j", (options, message) => {
    expect(() => new TokenBucket(options)).toThrow(message);
  });
});

describe("token bucket without waiting (as the event recorder uses it)", () => {
  it("allows a burst, then one token per 1/qps seconds", () => {
    const { clock, bucket: b } = bucket(0.5, 3);
    expect([0, 0, 0, 0].map(() => b.tryAcquire())).toEqual([true, true, true, false]);
    clock.tick(1000);
    expect(b.tryAcquire()).toBe(false);
    clock.tick(1000);
    expect(b.tryAcquire()).toBe(true);
    expect(b.tryAcquire()).toBe(false);
  });

  it("never holds more than the burst however long it rests", () => {
    const { clock, bucket: b } = bucket(10, 2);
    b.tryAcquire();
    clock.tick(3_600_000);
    const taken = [1, 2, 3].map(() => b.tryAcquire());
    expect(taken).toEqual([true, true, false]);
  });
});

describe("token bucket: time until the next token", () => {
  it("is 0 while a token is there, then the time the refill takes, counting down with the clock", () => {
    const { clock, bucket: b } = bucket(4, 2);
    expect(b.msUntilToken()).toBe(0);
    b.tryAcquire();
    b.tryAcquire();
    expect(b.msUntilToken()).toBe(250);
    clock.tick(100);
    expect(b.msUntilToken()).toBe(150);
    clock.tick(150);
    expect(b.msUntilToken()).toBe(0);
    expect(b.tryAcquire()).toBe(true);
  });

  it("is 0 for an unlimited bucket", () => {
    const { bucket: b } = bucket(0, 0);
    expect(b.msUntilToken()).toBe(0);
  });
});

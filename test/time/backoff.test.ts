// Per-key exponential backoff (work queue retries) and jittered backoff (informer reconnects).
import { describe, expect, it } from "vitest";
import { ItemExponentialBackoff, JitteredBackoff } from "../../src/time/backoff.js";
import { isPlatformError } from "../../src/errors.js";

describe("ItemExponentialBackoff", () => {
  it("doubles per failure from 5 ms up to the 1000 s cap by default", () => {
    const b = new ItemExponentialBackoff();
    const delays = Array.from({ length: 30 }, () => b.when("k"));
    expect(delays.slice(0, 4)).toEqual([5, 10, 20, 40]);
    expect(delays[17]).toBe(5 * 2 ** 17);
    expect(delays.at(-1)).toBe(1_000_000);
    expect(b.numRequeues("k")).toBe(30);
  });

  it("counts keys separately and starts a key over after forget", () => {
    const b = new ItemExponentialBackoff({ baseMs: 100, maxMs: 1000 });
    b.when("a");
    b.when("a");
    expect(b.when("b")).toBe(100);
    expect(b.when("a")).toBe(400);
    b.forget("a");
    expect([b.numRequeues("a"), b.when("a")]).toEqual([0, 100]);
  });

  it.each([
    [{ baseMs: 0 }, "baseMs"],
    [{ maxMs: -1 }, "maxMs"],
    [{ baseMs: 10, maxMs: 5 }, "maxMs"],
  ])("refuses options %j naming %s", (options, name) => {
    try {
      new ItemExponentialBackoff(options);
      expect.unreachable();
    } catch (err) {
      expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
      expect((err as Error).message).toContain(`\`${name}\``);
    }
  });
});

describe("JitteredBackoff", () => {
  it("grows by the factor up to the cap with jitter adding up to one delay", () => {
    const b = new JitteredBackoff({ initialMs: 100, maxMs: 1000, factor: 2, jitter: 1 }, () => 0.5);
    let t = 0;
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const d = b.next(t);
      delays.push(d);
      t += d;
    }
    expect(delays).toEqual([150, 300, 600, 1200, 1500, 1500]);
  });

  it("starts over after a quiet period longer than resetAfterMs", () => {
    const b = new JitteredBackoff({ initialMs: 100, maxMs: 10_000, jitter: 0, resetAfterMs: 1000 }, () => 0);
    expect([b.next(0), b.next(100), b.next(300)]).toEqual([100, 200, 400]);
    expect(b.next(300 + 400 + 1001)).toBe(100);
  });

  it("refuses a negative jitter", () => {
    expect(() => new JitteredBackoff({ jitter: -1 })).toThrow(/`backoff.jitter`/);
  });
});

// The one clock: the fake clock's two ways to move (advance, tick), sleeps ended by a signal, the system clock.
import { describe, expect, it } from "vitest";
import { formatMicroTime } from "../../src/api/meta.js";
import { systemClock } from "../../src/time/clock.js";
import { FakeClock } from "../../src/time/fake-clock.js";

const T0 = Date.UTC(2025, 0, 1);

describe("FakeClock", () => {
  it("starts at the given time and moves only when advanced", async () => {
    const clock = new FakeClock(T0);
    expect(clock.now()).toBe(T0);
    await clock.advance(1500);
    expect(clock.now()).toBe(T0 + 1500);
  });

  it("fires timers in time order, ties in the order they were set, with now() at each due time", async () => {
    const clock = new FakeClock(T0);
    const fired: [string, number][] = [];
    const at = (name: string) => () => fired.push([name, clock.now() - T0]);
    clock.setTimer(300, at("c"));
    clock.setTimer(100, at("a"));
    clock.setTimer(100, at("b"));
    clock.setTimer(301, at("late"));
    await clock.advance(300);
    expect(fired).toEqual([["a", 100], ["b", 100], ["c", 300]]);
    expect(clock.pendingTimers()).toBe(1);
    expect(clock.nextTimerIn()).toBe(1);
  });

  it("does not fire a cancelled timer", async () => {
    const clock = new FakeClock(T0);
    let fired = 0;
    const cancel = clock.setTimer(10, () => fired++);
    cancel();
    await clock.advance(100);
    expect(fired).toBe(0);
  });

  it("runs promise chains between timers so a sleep loop sees every tick", async () => {
    const clock = new FakeClock(T0);
    const ticks: number[] = [];
    void (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(1000);
        ticks.push(clock.now() - T0);
      }
    })();
    await clock.advance(5000);
    expect(ticks).toEqual([1000, 2000, 3000]);
  });

  it.each([
    ["before the sleep starts", true],
    ["while it waits", false],
  ])("resolves a sleep at once when its signal aborts %s", async (_when, early) => {
    const clock = new FakeClock(T0);
    const controller = new AbortController();
    if (early) controller.abort();
    let done = false;
    void clock.sleep(60_000, controller.signal).then(() => (done = true));
    controller.abort();
    await clock.flush();
    expect(done).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("advances in steps until a condition holds and reports when it never does", async () => {
    const clock = new FakeClock(T0);
    let flag = false;
    clock.setTimer(250, () => (flag = true));
    expect(await clock.advanceUntil(() => flag, 1000, 100)).toBe(true);
    expect(clock.now() - T0).toBe(300);
    expect(await clock.advanceUntil(() => false, 500, 100)).toBe(false);
  });

  it("ticks synchronously: due timers fire at once, in order, and promise chains wait for the caller", async () => {
    const clock = new FakeClock(T0);
    const fired: [string, number][] = [];
    clock.setTimer(200, () => fired.push(["b", clock.now() - T0]));
    clock.setTimer(100, () => {
      fired.push(["a", clock.now() - T0]);
      clock.setTimer(50, () => fired.push(["a2", clock.now() - T0]));
    });
    let slept = false;
    void clock.sleep(10).then(() => (slept = true));
    clock.tick(199);
    expect(fired).toEqual([["a", 100], ["a2", 150]]);
    expect(slept).toBe(false);
    expect(clock.now() - T0).toBe(199);
    await clock.flush();
    expect(slept).toBe(true);
    clock.tick(-199);
    expect([clock.now(), clock.pendingTimers()]).toEqual([T0, 1]);
    expect(() => clock.tick(Number.NaN)).toThrow(RangeError);
  });

  it("refuses a negative advance", async () => {
    await expect(new FakeClock(T0).advance(-1)).rejects.toThrow(RangeError);
  });
});

describe("systemClock and formatMicroTime", () => {
  it("keeps the process alive for a sleep (someone awaits it) but not for a background timer", async () => {
    const refTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = refTimers();
    const cancel = systemClock.setTimer(60_000, () => undefined);
    expect(refTimers()).toBe(before);
    cancel();
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    expect(refTimers()).toBe(before + 1);
    controller.abort();
    await sleeping;
    expect(refTimers()).toBe(before);
  });

  it("sleeps with real timers and can be cancelled by its signal", async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    controller.abort();
    await expect(sleeping).resolves.toBeUndefined();
  });

  it.each([
    [Date.UTC(2025, 0, 1, 12, 30, 45, 123), "2025-01-01T12:30:45.123000Z"],
    [Date.UTC(2024, 1, 29), "2024-02-29T00:00:00.000000Z"],
  ])("writes %s as an RFC 3339 MicroTime", (ms, text) => {
    expect(formatMicroTime(new Date(ms))).toBe(text);
  });
});

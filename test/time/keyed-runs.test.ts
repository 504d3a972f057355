// KeyedRuns on a fake clock: one run of a key at a time, a key asked for while it runs runs again after, retries
// backed off and forgotten on success, an earlier time kept, close cancelling what waits.
import { describe, expect, it } from "vitest";
import { FakeClock, settle } from "../../src/time/fake-clock.js";
import { KeyedRuns } from "../../src/time/keyed-runs.js";

/** A run per call that the test ends (true: try again), recording when each started. */
function harness(options: { baseMs?: number; maxMs?: number } = {}) {
  const clock = new FakeClock(0);
  const started: { key: string; at: number }[] = [];
  const open: { key: string; end: (retry: boolean | Error) => void }[] = [];
  let concurrent = 0;
  let most = 0;
  const runs = new KeyedRuns({
    clock,
    baseMs: options.baseMs ?? 1000,
    maxMs: options.maxMs ?? 60_000,
    run: (key) => {
      started.push({ key, at: clock.now() });
      most = Math.max(most, ++concurrent);
      return new Promise<boolean>((resolve, reject) => {
        open.push({
          key,
          end: (retry) => {
            concurrent--;
            if (retry instanceof Error) reject(retry);
            else resolve(retry);
          },
        });
      });
    },
  });
  const finish = async (retry: boolean | Error) => {
    open.shift()!.end(retry);
    await settle();
  };
  return { clock, runs, started, open, finish, most: () => most };
}

describe("KeyedRuns", () => {
  it("never runs a key twice at once: asked for while it runs, it runs once more after", async () => {
    const h = harness();
    h.runs.schedule("a");
    await h.clock.advance(0);
    expect(h.started).toEqual([{ key: "a", at: 0 }]);
    h.runs.schedule("a");
    h.runs.schedule("a");
    await h.clock.advance(0);
    expect(h.started).toHaveLength(1);
    await h.finish(false);
    await h.clock.advance(0);
    expect(h.started).toHaveLength(2);
    await h.finish(false);
    await h.clock.advance(10_000);
    expect(h.started).toHaveLength(2);
    expect(h.most()).toBe(1);
    expect(h.runs.size).toBe(0);
  });

  it("runs different keys side by side", async () => {
    const h = harness();
    h.runs.schedule("a");
    h.runs.schedule("b");
    await h.clock.advance(0);
    expect(h.started.map((s) => s.key)).toEqual(["a", "b"]);
    expect(h.most()).toBe(2);
  });

  it("retries a failing key after baseMs doubled per failure, up to maxMs, and starts again from baseMs after a success", async () => {
    const h = harness({ baseMs: 1000, maxMs: 3000 });
    const waits: number[] = [];
    /** Ends the open run after a while, and measures how long the key waits for its next run. */
    const endThenWait = async (retry: boolean | Error) => {
      await h.clock.advance(500);
      const ended = h.clock.now();
      await h.finish(retry);
      const before = h.started.length;
      await h.clock.advanceUntil(() => h.started.length > before, 10_000, 100);
      waits.push(h.started.at(-1)!.at - ended);
    };
    h.runs.schedule("a");
    await h.clock.advance(0);
    for (const retry of [true, new Error("refused"), true, true]) await endThenWait(retry);
    await h.finish(false);
    h.runs.schedule("a");
    await h.clock.advance(0);
    await endThenWait(true);
    expect(waits).toEqual([1000, 2000, 3000, 3000, 1000]);
  });

  it("keeps the earlier time of a waiting key: a later delay does not postpone it, no delay runs it now", async () => {
    const h = harness();
    h.runs.schedule("a", 5000);
    h.runs.schedule("a", 9000);
    await h.clock.advance(4999);
    expect(h.started).toEqual([]);
    h.runs.schedule("a");
    await h.clock.advance(0);
    expect(h.started).toEqual([{ key: "a", at: 4999 }]);
    await h.finish(false);
    await h.clock.advance(10_000);
    expect(h.started).toHaveLength(1);
  });

  it("runs a key asked for while its run failed at once, not after the backoff", async () => {
    const h = harness();
    h.runs.schedule("a");
    await h.clock.advance(0);
    h.runs.schedule("a");
    await h.finish(true);
    await h.clock.advance(0);
    expect(h.started.map((s) => s.at)).toEqual([0, 0]);
  });

  it("cancels what waits on close, and schedules nothing after a run that was in progress", async () => {
    const h = harness();
    h.runs.schedule("a");
    h.runs.schedule("b", 1000);
    await h.clock.advance(0);
    h.runs.close();
    h.runs.schedule("c");
    await h.finish(true);
    await h.clock.advance(120_000);
    expect(h.started.map((s) => s.key)).toEqual(["a"]);
  });
});

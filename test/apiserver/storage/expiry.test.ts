// The embedded backends' expiry: the heap hands out exactly the due entries in time order; the expirer deletes each
// due key with its revision as the precondition, skips what was written again, and tries a failed delete again.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Expirer, ExpiryQueue, type Expiring } from "../../../src/apiserver/storage/expiry.js";
import { PlatformError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

describe("expiry queue", () => {
  it("returns exactly the entries due, earliest first, whatever the order they were added in", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 200 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1, max: 300 }), (times, now, max) => {
        const q = new ExpiryQueue();
        times.forEach((at, i) => q.add({ at, key: `/k/${i}`, rev: i }));
        const due = q.takeDue(now, max);
        const expected = times.filter((t) => t <= now).sort((a, b) => a - b).slice(0, max);
        expect(due.map((e) => e.at)).toEqual(expected);
        expect(q.size).toBe(times.length - due.length);
        if (q.size > 0 && due.length < max) expect(q.next()!).toBeGreaterThan(now);
      }),
    );
  });
});

describe("expirer", () => {
  it("deletes each due key with its revision, skips one written again since, and retries a failed delete", async () => {
    const clock = new FakeClock(0);
    const removed: Expiring[] = [];
    let failures = 1;
    const expirer = new Expirer(clock, silentLogger(), async (key, rev) => {
      if (key === "/k/again") throw new PlatformError("CONFLICT", "written again");
      if (key === "/k/flaky" && failures-- > 0) throw new PlatformError("STORAGE_UNAVAILABLE", "disk full");
      removed.push({ at: clock.now(), key, rev });
    });
    expirer.add({ at: 2000, key: "/k/a", rev: 2 });
    expirer.add({ at: 1000, key: "/k/again", rev: 3 });
    expirer.add({ at: 1000, key: "/k/flaky", rev: 4 });
    expirer.add({ at: 60_000, key: "/k/later", rev: 5 });
    await clock.advance(999);
    expect(removed).toEqual([]);
    await clock.advance(1001);
    expect(removed.map((r) => [r.key, r.rev])).toEqual([["/k/a", 2]]);
    // The failed one is tried again five seconds later; the one written again is not.
    await clock.advance(5000);
    expect(removed.map((r) => r.key)).toEqual(["/k/a", "/k/flaky"]);
    expect(expirer.pending).toBe(1);
    expirer.close();
    await clock.advance(60_000);
    expect(removed).toHaveLength(2);
    expect(clock.pendingTimers()).toBe(0);
  });

  it("works off a backlog sweep after sweep, without the pause between sweeps that keeps a quiet store cheap", async () => {
    const clock = new FakeClock(0);
    const removed: number[] = [];
    const expirer = new Expirer(clock, silentLogger(), async () => void removed.push(clock.now()));
    for (let i = 0; i < 2500; i++) expirer.add({ at: 1000, key: `/k/${i}`, rev: i + 2 });
    await clock.advance(1000);
    expect(removed).toHaveLength(2500);
    expect(new Set(removed)).toEqual(new Set([1000]));
    expirer.add({ at: 1100, key: "/k/next", rev: 9000 });
    await clock.advance(100);
    expect(removed).toHaveLength(2500);
    await clock.advance(400);
    expect(removed.at(-1)).toBe(1500);
  });

  it("holds what still expires, not every write of the last time to live: deleted and rewritten keys' entries are dropped", async () => {
    const clock = new FakeClock(0);
    const removed: string[] = [];
    // As the store: a delete whose revision is not the key's last meets CONFLICT.
    const latest = new Map<string, number>();
    let failures = 1;
    const expirer = new Expirer(clock, silentLogger(), async (key, rev) => {
      if (latest.get(key) !== rev) throw new PlatformError("CONFLICT", "written again");
      if (key === "/k/flaky" && failures-- > 0) throw new PlatformError("STORAGE_UNAVAILABLE", "disk full");
      removed.push(key);
    });
    const add = (e: Expiring) => (latest.set(e.key, e.rev), expirer.add(e));
    add({ at: 1000, key: "/k/flaky", rev: 1 });
    add({ at: 50_000, key: "/k/kept", rev: 2 });
    // A delete that failed is tried again later, with a time after its key's own: a rebuild keeps it.
    await clock.advance(1000);
    expect(removed).toEqual([]);
    // 3,000 Events deleted, and one key written 1,000 times: the queue is rebuilt around the live entries.
    for (let i = 0; i < 3000; i++) add({ at: 60_000, key: `/k/deleted/${i}`, rev: 10 + i });
    for (let i = 0; i < 3000; i++) expirer.forget(`/k/deleted/${i}`);
    expect(expirer.pending).toBe(3002);
    for (let i = 0; i < 3000; i++) add({ at: 2000 + i, key: "/k/rewritten", rev: 5000 + i });
    // Rebuilt at the first of these writes (the deleted keys' entries gone), and again each time the rewritten key's
    // stale entries passed the slack: never more than the slack above the three live entries.
    expect(expirer.pending).toBeLessThanOrEqual(3 * 2 + 1024 + 1);
    add({ at: 70_000, key: "/k/last", rev: 9000 });
    await clock.advance(69_000);
    expect(removed.sort()).toEqual(["/k/flaky", "/k/kept", "/k/last", "/k/rewritten"]);
    expect(expirer.pending).toBe(0);
  });
});

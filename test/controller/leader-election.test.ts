import { afterEach, describe, expect, it } from "vitest";
import type { Lease } from "../../src/api/types/coordination.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { LeaderElector, type LeaderElectorOptions } from "../../src/controller/leader-election.js";
import { FakeStore, type FakeClient } from "./fake-store.js";

const T0 = Date.UTC(2025, 0, 1);
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

interface Candidate {
  readonly id: string;
  readonly elector: LeaderElector;
  readonly client: FakeClient<Lease>;
  /** `started@ms`, `stopped@ms`, `leader=<id>@ms`, relative to T0. */
  readonly log: string[];
  leadSignal?: AbortSignal;
}

const electors: LeaderElector[] = [];
afterEach(async () => {
  await Promise.all(electors.splice(0).map((e) => e.stop()));
});

function world() {
  const clock = new FakeClock(T0);
  const store = new FakeStore<Lease>({ kind: "Lease", apiVersion: "coordination.platform.io/v1", now: () => clock.now() });
  const at = (): number => clock.now() - T0;
  const candidate = (id: string, options: Partial<LeaderElectorOptions> = {}): Candidate => {
    const client = store.client();
    const log: string[] = [];
    const c: Candidate = {
      id,
      client,
      log,
      elector: new LeaderElector({
        client,
        name: "platform-controller-manager",
        namespace: "platform-system",
        identity: id,
        clock,
        random: () => 0,
        callbacks: {
          onStartedLeading: (signal) => {
            c.leadSignal = signal;
            log.push(`started@${at()}`);
          },
          onStoppedLeading: () => log.push(`stopped@${at()}`),
          onNewLeader: (leader) => log.push(`leader=${leader}@${at()}`),
        },
        ...options,
      }),
    };
    electors.push(c.elector);
    return c;
  };
  const lease = (): Lease | undefined => store.objects.get("platform-system/platform-controller-manager");
  const times = (c: Candidate, what: string): number[] => c.log.filter((l) => l.startsWith(what)).map((l) => Number(l.split("@")[1]));
  /** Candidate "a" leading, then candidate "b" campaigning against it. */
  const leaderAndRival = async (): Promise<{ a: Candidate; b: Candidate }> => {
    const a = candidate("a");
    a.elector.start();
    await clock.flush();
    const b = candidate("b");
    b.elector.start();
    return { a, b };
  };
  return { clock, store, candidate, lease, times, at, leaderAndRival };
}

describe("LeaderElector", () => {
  it.each([
    ["no lease exists yet", false],
    ["the lease was released", true],
  ])("lets exactly one of two candidates lead when %s", async (_name, released) => {
    const w = world();
    if (released) {
      w.store.put(w.store.make("platform-controller-manager", { namespace: "platform-system", spec: { holderIdentity: "", leaseDurationSeconds: 1, leaseTransitions: 4 } }));
    }
    const a = w.candidate("a");
    const b = w.candidate("b");
    a.elector.start();
    b.elector.start();
    await w.clock.advance(30_000);
    const leaders = [a, b].filter((c) => c.elector.isLeader());
    expect(leaders).toHaveLength(1);
    const winner = leaders[0]!;
    const loser = winner === a ? b : a;
    expect(w.times(winner, "started")).toEqual([0]);
    expect(w.times(loser, "started")).toEqual([]);
    expect(loser.elector.leader()).toBe(winner.id);
    // The loser lost the write race and learns the winner on its next attempt, one retry period later.
    expect(loser.log).toContain(`leader=${winner.id}@2000`);
    const spec = w.lease()!.spec!;
    expect(spec).toMatchObject({ holderIdentity: winner.id, leaseDurationSeconds: 15, leaseTransitions: released ? 5 : 0 });
    expect([spec.acquireTime, spec.renewTime]).toEqual([expect.stringMatching(MICRO_TIME), expect.stringMatching(MICRO_TIME)]);
    expect(w.lease()!.apiVersion).toBe("coordination.platform.io/v1");
  });

  it("renews every retry period while leading, keeping acquireTime", async () => {
    const w = world();
    const a = w.candidate("a");
    a.elector.start();
    await w.clock.flush();
    const acquired = w.lease()!.spec!.acquireTime;
    const renewals: string[] = [];
    for (let i = 0; i < 3; i++) {
      await w.clock.advance(2000);
      renewals.push(w.lease()!.spec!.renewTime!);
    }
    expect(renewals).toEqual(["2025-01-01T00:00:02.000000Z", "2025-01-01T00:00:04.000000Z", "2025-01-01T00:00:06.000000Z"]);
    expect(w.lease()!.spec!.acquireTime).toBe(acquired);
  });

  it("steps down within renewDeadline when renewals fail, and a rival takes over only after leaseDuration", async () => {
    const w = world();
    const { a, b } = await w.leaderAndRival();
    await w.clock.advance(20_000);
    const lastRenew = Date.parse(w.lease()!.spec!.renewTime!) - T0;
    a.client.down = true;
    await w.clock.advance(60_000);
    const [stoppedAt] = w.times(a, "stopped");
    const [takenAt] = w.times(b, "started");
    expect(stoppedAt).toBeLessThanOrEqual(lastRenew + 10_000);
    expect(a.leadSignal?.aborted).toBe(true);
    expect(takenAt).toBeGreaterThanOrEqual(lastRenew + 15_000);
    expect(takenAt).toBeLessThanOrEqual(lastRenew + 15_000 + 2 * 2000);
    expect(stoppedAt).toBeLessThan(takenAt!);
    expect(w.lease()!.spec).toMatchObject({ holderIdentity: "b", leaseTransitions: 1 });
  });

  it("counts the renew deadline from when a renewal was sent, not from when it was answered", async () => {
    const w = world();
    const a = w.candidate("a");
    a.client.latency = { clock: w.clock, ms: 3000 };
    a.elector.start();
    await w.clock.advance(20_000);
    a.client.down = true;
    await w.clock.advance(30_000);
    const lastRenewSent = Date.parse(w.lease()!.spec!.renewTime!) - T0;
    const [stoppedAt] = w.times(a, "stopped");
    expect(stoppedAt).toBeLessThanOrEqual(lastRenewSent + 10_000);
  });

  it("steps down at the deadline even when a renewal request never answers", async () => {
    const w = world();
    const a = w.candidate("a");
    a.elector.start();
    await w.clock.advance(4000);
    a.client.hangNext("get");
    await w.clock.advance(30_000);
    expect(w.times(a, "stopped")).toEqual([4000 + 10_000]);
  });

  it("does not trust the lease's own timestamps: a stale-looking lease is honoured for a full leaseDuration", async () => {
    const w = world();
    const ancient = "2001-01-01T00:00:00.000000Z";
    w.store.put(w.store.make("platform-controller-manager", { namespace: "platform-system", spec: { holderIdentity: "gone", leaseDurationSeconds: 15, renewTime: ancient, acquireTime: ancient } }));
    const b = w.candidate("b");
    b.elector.start();
    await w.clock.advance(14_000);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.elector.leader()).toBe("gone");
    await w.clock.advance(4000);
    expect(w.times(b, "started")).toEqual([16_000]);
  });

  it("hands over at once on release: the rival does not wait out the lease", async () => {
    const w = world();
    const { a, b } = await w.leaderAndRival();
    await w.clock.advance(5000);
    await a.elector.stop();
    expect(w.lease()!.spec).toMatchObject({ holderIdentity: "", leaseDurationSeconds: 1 });
    expect(w.times(a, "stopped")).toEqual([5000]);
    await w.clock.advance(2000);
    expect(w.times(b, "started")).toEqual([6000]);
  });

  it("leaves the lease to expire when release is turned off", async () => {
    const w = world();
    const a = w.candidate("a", { releaseOnStop: false });
    a.elector.start();
    await w.clock.flush();
    await a.elector.stop();
    expect(w.lease()!.spec!.holderIdentity).toBe("a");
    expect(w.times(a, "stopped")).toEqual([0]);
  });

  it("steps down when it finds another holder written into the lease", async () => {
    const w = world();
    const a = w.candidate("a");
    a.elector.start();
    await w.clock.flush();
    const current = w.lease()!;
    w.store.put({ ...current, spec: { ...current.spec, holderIdentity: "intruder" } });
    await w.clock.advance(2000);
    expect(w.times(a, "stopped")).toEqual([2000]);
    expect(a.log).toContain("leader=intruder@2000");
  });

  it("keeps campaigning after a callback throws", async () => {
    const w = world();
    const a = w.candidate("a", {
      callbacks: {
        onStartedLeading: () => {
          throw new Error("boom");
        },
      },
    });
    a.elector.start();
    await w.clock.advance(10_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(w.lease()!.spec!.renewTime).toBe("2025-01-01T00:00:10.000000Z");
  });

  it.each([
    [{ leaseDurationMs: 10_000, renewDeadlineMs: 12_000 }, "renewDeadlineMs"],
    [{ renewDeadlineMs: 2400, retryPeriodMs: 2000 }, "renewDeadlineMs"],
    [{ retryPeriodMs: 0 }, "retryPeriodMs"],
    [{ identity: "" }, "identity"],
  ])("refuses options %j", (bad, name) => {
    const store = new FakeStore<Lease>();
    const options: LeaderElectorOptions = { client: store.client(), name: "l", namespace: "ns", identity: "me", callbacks: { onStartedLeading: () => {} }, ...bad };
    expect(() => new LeaderElector(options)).toThrow(new RegExp(`\`${name}\``));
  });
});

// The etcd backend's lease manager: one lease per reuse window, as upstream's, with a fake grant and a fake clock.
import { describe, expect, it } from "vitest";
import { LeaseManager } from "../../../src/apiserver/storage/etcd/leases.js";
import { FakeClock } from "../../../src/time/fake-clock.js";

function manager() {
  const clock = new FakeClock();
  const grants: number[] = [];
  const leases = new LeaseManager(async (ttl) => {
    grants.push(ttl);
    await new Promise((r) => setTimeout(r, 1));
    return `${9_000_000_000_000_000_001n + BigInt(grants.length)}`;
  }, clock);
  return { clock, grants, leases };
}

describe("etcd lease manager", () => {
  it("grants the TTL plus 5% of it (at most 60 s) and hands the lease out until the window has passed", async () => {
    const { clock, grants, leases } = manager();
    const first = await leases.lease(3600);
    expect(grants).toEqual([3660]);
    // An ID beyond 2^53 stays exact: it goes to etcd as the decimal it came as.
    expect(first).toBe("9000000000000000002");
    clock.tick(59_000);
    expect(await leases.lease(3600)).toBe(first);
    clock.tick(1_000);
    // The lease would now end less than an hour from this write: a new one.
    expect(await leases.lease(3600)).not.toBe(first);
    expect(grants).toEqual([3660, 3660]);
    // 5% of 100 s: a window of 5 s.
    await leases.lease(100);
    expect(grants.at(-1)).toBe(105);
  });

  it("shares one grant among the writes that arrive while it is asked for, and a short TTL has no window", async () => {
    const { grants, leases } = manager();
    const ids = await Promise.all(Array.from({ length: 50 }, () => leases.lease(10)));
    expect(new Set(ids).size).toBe(1);
    expect(grants).toEqual([10]);
    // 5% of 10 s rounds to no window: each later write asks again.
    await leases.lease(10);
    expect(grants).toEqual([10, 10]);
  });

  it("puts at most 1,000 keys on a lease, and takes a new one for a longer TTL or once the lease is forgotten", async () => {
    const { grants, leases } = manager();
    const ids = [];
    for (let i = 0; i < 1001; i++) ids.push(await leases.lease(3600));
    expect(new Set(ids.slice(0, 1000)).size).toBe(1);
    expect(ids[1000]).not.toBe(ids[0]);
    expect(grants).toHaveLength(2);
    expect(await leases.lease(7200)).not.toBe(ids[1000]);
    const current = await leases.lease(7200);
    leases.forget(current);
    expect(await leases.lease(7200)).not.toBe(current);
    expect(grants).toEqual([3660, 3660, 7260, 7260]);
  });

  it("fails a write when the grant fails, and asks again for the next", async () => {
    const clock = new FakeClock();
    let fail = true;
    const leases = new LeaseManager(async () => {
      if (fail) throw new Error("etcd LeaseGrant failed: unavailable");
      return "7";
    }, clock);
    await expect(leases.lease(60)).rejects.toThrow("etcd LeaseGrant failed: unavailable");
    fail = false;
    expect(await leases.lease(60)).toBe("7");
  });
});

// Runs the storage contract against real etcd (a fresh single member per store: etcd's revision and compaction are
// cluster-wide, and the contract counts revisions from 1), also under encryption, plus what only etcd must do: TLS,
// reconnects, leader changes, several replicas sharing one cluster.
import { afterAll, describe, expect, it } from "vitest";
import { openEtcdStorage, type EtcdStorageOptions } from "../../../src/apiserver/storage/etcd/store.js";
import { encryptedStorage } from "../../../src/apiserver/encryption/encrypted-storage.js";
import type { Storage } from "../../../src/apiserver/storage/types.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { startEtcd, type EtcdCluster } from "../../fixtures/etcd.js";
import { everythingWith } from "../encryption/fixtures.js";
import { recorder, rejection, storageContract } from "./contract.js";

const clusters: EtcdCluster[] = [];
const stores: Storage<never>[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(clusters.map((c) => c.stop()));
});
async function cluster(options: Parameters<typeof startEtcd>[0] = {}): Promise<EtcdCluster> {
  const c = await startEtcd(options);
  clusters.push(c);
  return c;
}
async function store(c: EtcdCluster, options: Partial<EtcdStorageOptions> = {}): Promise<Storage> {
  const s = await openEtcdStorage({ endpoints: c.endpoints, ...(c.tls && { tls: c.tls }), ...options });
  stores.push(s as Storage<never>);
  return s;
}

storageContract("etcd", async (options) => store(await cluster(), options));
storageContract("etcd + aesgcm", async (options) => encryptedStorage(await openEtcdStorage<Uint8Array>({ endpoints: (await cluster()).endpoints, values: "bytes", ...options }), everythingWith("aesgcm")));

describe("etcd storage", () => {
  it("puts keys with a time to live under one lease per window, as upstream, and writes on after etcd revokes it", async () => {
    const c = await cluster();
    const s = await store(c);
    const w = recorder(s, "/ev/", 0);
    await w.live;
    for (let i = 0; i < 5; i++) await s.create(`/ev/${i}`, "{}", 3600);
    const leases = () => c.etcdctl("lease", "list").trim().split("\n").slice(1);
    const [lease] = leases();
    expect(leases()).toHaveLength(1);
    // The TTL plus the reuse window (5% of it, at most a minute), every key on it: IDs use all 64 bits and survive.
    const life = c.etcdctl("lease", "timetolive", lease!, "--keys");
    expect(life).toMatch(/granted with TTL\(3660s\)/);
    // etcdctl lists the attached keys in no set order.
    const attached = (text: string) => /attached keys\(\[(.*)\]\)/.exec(text)?.[1]?.split(" ").sort();
    expect(attached(life)).toEqual([0, 1, 2, 3, 4].map((i) => `/platform-ca/ev/${i}`));
    c.etcdctl("lease", "revoke", lease!);
    const deleted = await w.until(10);
    expect(deleted.slice(5).map((e) => [e.type, e.key]).sort()).toEqual([0, 1, 2, 3, 4].map((i) => ["DELETE", `/ev/${i}`]));
    // The store still holds the revoked lease: its next write learns that it is gone and takes a new one.
    await s.create("/ev/after", "{}", 3600);
    expect(leases()).toHaveLength(1);
    expect(leases()[0]).not.toBe(lease);
    expect(attached(c.etcdctl("lease", "timetolive", leases()[0]!, "--keys"))).toEqual(["/platform-ca/ev/after"]);
    w.watch.cancel();
  });

  it("talks TLS with a client certificate and is refused without one", async () => {
    const c = await cluster({ tls: true });
    const s = await store(c);
    const kv = await s.create("/t/a", "{}");
    expect((await s.get("/t/a"))?.modRevision).toBe(kv.modRevision);
    const anonymous = await rejection(openEtcdStorage({ endpoints: c.endpoints, tls: { ca: c.tls!.ca }, callTimeoutMs: 2000 }), "STORAGE_UNAVAILABLE");
    expect((anonymous as { retryable?: boolean }).retryable).toBe(true);
  });

  it("keeps a watch going across a restart of its only member, without a gap, and fails writes meanwhile", async () => {
    const c = await cluster();
    const s = await store(c, { callTimeoutMs: 1000 });
    const w = recorder(s, "/r/", await s.revision());
    await w.live;
    const first = await s.create("/r/a", "{}");
    await c.members[0]!.stop();
    await rejection(s.create("/r/down", "{}"), "STORAGE_UNAVAILABLE");
    c.members[0]!.start();
    await c.members[0]!.healthy();
    const second = await s.create("/r/b", "{}");
    const events = await w.until(2);
    expect(events.map((e) => [e.key, e.revision])).toEqual([["/r/a", first.modRevision], ["/r/b", second.modRevision]]);
    w.watch.cancel();
  });

  it("shows each replica's writes to the other's watchers through a leader change, in one revision order", async () => {
    const c = await cluster({ members: 3 });
    // Replica A talks to the leader first, replica B to a follower first: killing the leader forces an election and
    // moves A's calls and watch stream to another member.
    const m0 = await c.leader();
    const [m1, m2] = c.members.filter((m) => m !== m0);
    const a = await store(c, { endpoints: [m0.clientUrl, m1!.clientUrl, m2!.clientUrl] });
    const b = await store(c, { endpoints: [m1!.clientUrl, m2!.clientUrl, m0.clientUrl] });
    const from = await a.revision();
    const onA = recorder(a, "/x/", from);
    const onB = recorder(b, "/x/", from);
    const written: number[] = [];
    for (let i = 0; i < 20; i++) written.push((await (i % 2 ? a : b).create(`/x/${i}`, "{}")).modRevision);
    await m0.stop();
    for (let i = 20; i < 40; i++) {
      for (;;) {
        try {
          written.push((await (i % 2 ? a : b).create(`/x/${i}`, "{}")).modRevision);
          break;
        } catch (err) {
          // A write cut by the leader change is not acknowledged; it may have landed, so it is read back.
          const landed = await b.get(`/x/${i}`).catch(() => undefined);
          if (landed) {
            written.push(landed.modRevision);
            break;
          }
          expect((err as { retryable?: boolean }).retryable).toBe(true);
        }
      }
    }
    expect(await c.leader()).not.toBe(m0);
    const sorted = [...written].sort((x, y) => x - y);
    expect((await onA.until(40)).map((e) => e.revision)).toEqual(sorted);
    expect((await onB.until(40)).map((e) => e.revision)).toEqual(sorted);
    onA.watch.cancel();
    onB.watch.cancel();
  });

  it("under encryption, each replica reads the other's writes, never a text it decrypted for an earlier revision", async () => {
    const c = await cluster();
    const replica = async () => {
      const s: Storage = encryptedStorage(await openEtcdStorage<Uint8Array>({ endpoints: c.endpoints, values: "bytes" }), everythingWith("aesgcm"));
      stores.push(s as Storage<never>);
      return s;
    };
    const [a, b] = [await replica(), await replica()];
    const key = "/core/secrets/default/shared";
    await a.create(key, JSON.stringify({ v: 1 }));
    expect((await b.get(key))?.value).toBe(JSON.stringify({ v: 1 }));
    const wb = recorder(b, "/core/secrets/", await b.revision());
    await wb.live;
    // A's update: B's reads and B's watcher get the new text, though B holds the old one's for that key.
    const updated = await a.update(key, JSON.stringify({ v: 2 }));
    expect((await b.get(key))?.value).toBe(JSON.stringify({ v: 2 }));
    expect((await b.list("/core/secrets/")).items.map((kv) => kv.value)).toEqual([JSON.stringify({ v: 2 })]);
    // Deleted and created again by A: B reads the new object, not the text of the deleted one.
    await a.delete(key);
    const again = await a.create(key, JSON.stringify({ v: 3 }));
    expect((await b.get(key))?.value).toBe(JSON.stringify({ v: 3 }));
    const events = await wb.until(3);
    expect(events.map((e) => [e.type, e.kv.value, e.prev?.value])).toEqual([
      ["PUT", JSON.stringify({ v: 2 }), JSON.stringify({ v: 1 })],
      ["DELETE", JSON.stringify({ v: 2 }), JSON.stringify({ v: 2 })],
      ["PUT", JSON.stringify({ v: 3 }), undefined],
    ]);
    expect(events.map((e) => e.kv.modRevision)).toEqual([updated.modRevision, updated.modRevision, again.modRevision]);
    wb.watch.cancel();
  });

  it("ends a watch with GONE, never skipping events, when history arrives after its replay was assumed complete", async () => {
    const c = await cluster();
    // A quiet period of 1 ms: the replay is assumed done before etcd sends it, as on a host too busy for 1 s.
    const s = await store(c, { watch: { replayQuietMs: 1 } });
    const from = await s.revision();
    const written: number[] = [];
    for (let i = 0; i < 50; i++) written.push((await s.create(`/q/${i}`, "{}")).modRevision);
    // etcd sends the replay at its next sync (every 100 ms), now and then in the same turn as its answer to the
    // creation: nothing was assumed then, and the watch is synced with every event. So watch again until a replay
    // comes late (most tries here); every try, late or not, delivers what it delivers without a gap, and the owner of
    // one that ended lists again from there.
    let gone: (Error & { code?: string }) | undefined;
    for (let attempt = 0; attempt < 8 && gone === undefined; attempt++) {
      const w = recorder(s, "/q/", from);
      gone = await Promise.race([w.failed, w.until(written.length).then(() => undefined)]);
      expect(w.events.map((e) => e.revision)).toEqual(written.slice(0, w.events.length));
      if (gone === undefined) w.watch.cancel();
    }
    expect(gone?.code).toBe("GONE");
    // A watch from a revision etcd needs no replay for goes live at once and misses nothing.
    const again = recorder(s, "/q/", await s.revision());
    await again.live;
    const later = await s.create("/q/later", "{}");
    expect((await again.until(1)).map((e) => e.revision)).toEqual([later.modRevision]);
    again.watch.cancel();
  });

  it("lets one of two replicas compact per interval (compact_rev_key election) and both agree on the result", async () => {
    const c = await cluster();
    const clock = new FakeClock();
    const retention = { ageMs: 10_000, revisions: Infinity };
    const a = await store(c, { clock, retention });
    const b = await store(c, { clock, retention });
    let old = 0;
    for (let i = 0; i < 5; i++) old = (await a.create(`/c/${i}`, "{}")).modRevision;
    await b.create("/c/b", "{}");
    clock.tick(11_000);
    await a.create("/c/x", "{}");
    await b.create("/c/y", "{}");
    const raw = await openEtcdStorage({ endpoints: c.endpoints, prefix: "" });
    stores.push(raw as Storage<never>);
    // A wins the election with what it saw written over 10 s ago; B, which would compact further, adopts A's result
    // for this interval. The key lives outside the store's prefix, so lists never see it.
    const key = await raw.get("/platform-ca:compact_rev_key");
    expect(key?.value).toBe(String(old));
    expect((await raw.list("/platform-ca:")).items).toHaveLength(1);
    expect(await a.compactedRevision()).toBe(old);
    expect(await b.compactedRevision()).toBe(old);
    await rejection(b.list("/c/", { revision: old - 1 }), "GONE");
  });
});

// fenceEtcdRevision on a real one-member etcd: N revisions skipped through pipelined writes of one key outside the
// store's prefix, every earlier revision answers GONE to the store's lists and watches, objects are untouched.
import { afterAll, describe, expect, it } from "vitest";
import { fenceEtcdRevision, fenceKey } from "../../../src/apiserver/storage/etcd/revision-fence.js";
import { EtcdClient } from "../../../src/apiserver/storage/etcd/client.js";
import { openEtcdStorage } from "../../../src/apiserver/storage/etcd/store.js";
import type { EtcdKeyValue } from "../../../src/apiserver/storage/etcd/proto.js";
import { isPlatformError } from "../../../src/errors.js";
import { startEtcd, type EtcdCluster } from "../../fixtures/etcd.js";
import { recorder, rejection } from "./contract.js";

let etcd: EtcdCluster | undefined;
afterAll(async () => etcd?.stop());

describe("fenceEtcdRevision", () => {
  it("skips N revisions, deletes its key, compacts after them, and leaves the objects as they were", async () => {
    etcd = await startEtcd();
    const prefix = "/fenced";
    const store = await openEtcdStorage({ endpoints: etcd.endpoints, prefix });
    try {
      const a = await store.create("/g/r/a", "{}");
      await store.update("/g/r/a", JSON.stringify({ v: 2 }));
      const kept = (await store.list("/g/r/")).items;
      const fence = await fenceEtcdRevision({ endpoints: etcd.endpoints, prefix: `${prefix}/` }, 3000);
      expect(fence.to).toBe(fence.from + 3001);
      expect(await store.revision()).toBe(fence.to);
      expect(await store.compactedRevision()).toBe(fence.to);
      expect((await store.list("/g/r/")).items).toEqual(kept);
      for (const revision of [a.modRevision, fence.from, fence.to - 1]) {
        expect((await rejection(store.list("/g/r/", { revision }), "GONE")).message).toContain(`the oldest available revision is ${fence.to}`);
        const err = await recorder(store, "/g/r/", revision).failed;
        expect(isPlatformError(err, "GONE"), String(err)).toBe(true);
      }
      const w = recorder(store, "/g/r/", fence.to);
      expect((await store.create("/g/r/b", "{}")).modRevision).toBe(fence.to + 1);
      expect((await w.until(1)).map((e) => e.revision)).toEqual([fence.to + 1]);
      w.watch.cancel();
    } finally {
      await store.close();
    }
    // Nothing is left in etcd but the objects: the fence key is deleted (and the prefix's trailing slash ignored).
    expect(fenceKey(`${prefix}/`)).toBe("/fenced-revision-fence");
    const client = new EtcdClient({ endpoints: etcd.endpoints });
    try {
      const all = await client.call<{ kvs: EtcdKeyValue[] }>("Range", { key: Buffer.from([0]), range_end: Buffer.from([0]), keys_only: true }, false);
      expect(all.kvs.map((kv) => kv.key.toString())).toEqual(["/fenced/g/r/a", "/fenced/g/r/b", "/fenced:compact_rev_key"]);
    } finally {
      await client.close();
    }
  });

  it("fails with STORAGE_UNAVAILABLE, naming its first call, when no member answers", async () => {
    const err = await rejection(fenceEtcdRevision({ endpoints: ["http://127.0.0.1:9"], callTimeoutMs: 500 }, 10), "STORAGE_UNAVAILABLE");
    expect(err.message).toMatch(/^etcd Range failed: /);
  });
});

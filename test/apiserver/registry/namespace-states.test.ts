// The namespace check of a namespaced create reads the server's view of the namespaces, and storage only for a name
// the view lacks or while the view is not current.
import { afterAll, describe, expect, it } from "vitest";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { openEtcdStorage } from "../../../src/apiserver/storage/etcd/store.js";
import type { Storage } from "../../../src/apiserver/storage/types.js";
import { startEtcd, type EtcdCluster } from "../../fixtures/etcd.js";
import { until } from "../../fixtures/wait.js";
import { NamespaceStates, stateOf } from "../../../src/apiserver/registry/namespace-states.js";
import { silentLogger } from "../../../src/logger.js";
import { failure, FakeClock, registryFixture } from "../fixtures.js";
import { namespaceObject, serviceAccount } from "../../fixtures/objects.js";

/** Memory storage that counts the reads of one key. */
class CountingStorage extends MemoryStorage {
  readonly reads = new Map<string, number>();
  override async get(key: string) {
    this.reads.set(key, (this.reads.get(key) ?? 0) + 1);
    return super.get(key);
  }
}

const NS_KEY = "/core/namespaces/team-a";
const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("namespace states", () => {
  it("answers namespaced creates from the view: no storage read per create, and a deletion seen at once", async () => {
    const clock = new FakeClock();
    const storage = new CountingStorage({ clock });
    const { store } = await registryFixture({ clock, storage });
    await store("Namespace").create(undefined, namespaceObject({ name: "team-a" }), {});
    // The view's watch replays what was written since its list (a turn of the event loop), then follows as storage commits.
    await turn();
    storage.reads.clear();
    for (const name of ["one", "two", "three"]) await store("ServiceAccount").create("team-a", serviceAccount({ name, namespace: "team-a" }), {});
    expect(storage.reads.get(NS_KEY) ?? 0).toBe(0);
    // Marked for deletion: the very next create is refused, from the view.
    await store("Namespace").delete(undefined, "team-a", {});
    storage.reads.clear();
    const refused = await failure(store("ServiceAccount").create("team-a", serviceAccount({ name: "late", namespace: "team-a" }), {}));
    expect([refused.code, refused.causes?.[0]?.reason]).toEqual(["FORBIDDEN", "NamespaceTerminating"]);
    expect(storage.reads.get(NS_KEY) ?? 0).toBe(0);
    // A name the view has not seen is looked up in storage (and is not found there either).
    const missing = await failure(store("ServiceAccount").create("nowhere", serviceAccount({ name: "x", namespace: "nowhere" }), {}));
    expect([missing.code, missing.message]).toEqual(["NOT_FOUND", 'namespaces "nowhere" not found']);
    expect(storage.reads.get("/core/namespaces/nowhere")).toBe(1);
  });

  it("knows nothing before its first list and after its watch breaks, then follows storage again", async () => {
    const clock = new FakeClock();
    const storage = new MemoryStorage({ clock });
    await storage.create(NS_KEY, JSON.stringify(namespaceObject({ name: "team-a" })));
    const states = new NamespaceStates({ storage, prefix: "/core/namespaces/", clock, logger: silentLogger(), retryMs: 50 });
    expect(states.lookup("team-a")).toBeUndefined();
    await states.start();
    // Listed, but its watch has not yet replayed what came after the list: not trusted yet.
    expect(states.lookup("team-a")).toBeUndefined();
    await turn();
    expect(states.lookup("team-a")).toBe("active");
    const marked = { ...namespaceObject({ name: "team-b" }), metadata: { name: "team-b", deletionTimestamp: "2026-11-28T00:00:00Z" } };
    await storage.create("/core/namespaces/team-b", JSON.stringify(marked));
    expect(states.lookup("team-b")).toBe("terminating");
    await storage.delete("/core/namespaces/team-b");
    expect(states.lookup("team-b")).toBeUndefined();
    // The watch ends (the storage closes): from then on every lookup goes to storage.
    await storage.close();
    expect(states.lookup("team-a")).toBeUndefined();
    states.stop();
  });

  it("on two replicas sharing etcd: a namespace made on one is usable on the other at once, its deletion refused there once seen", async () => {
    const etcd: EtcdCluster = await startEtcd();
    cleanup.push(() => etcd.stop());
    const replica = async () => {
      const storage: Storage = await openEtcdStorage({ endpoints: etcd.endpoints });
      cleanup.push(() => storage.close());
      return registryFixture({ storage });
    };
    const a = await replica();
    const b = await replica();
    // b has never seen team-a: its view misses and it reads etcd, so the create is not refused.
    await a.store("Namespace").create(undefined, namespaceObject({ name: "team-a" }), {});
    await b.store("ServiceAccount").create("team-a", serviceAccount({ name: "first", namespace: "team-a" }), {});
    await a.store("Namespace").delete(undefined, "team-a", {});
    // Once b's view has the deletion (etcd's watch), b refuses as a itself does.
    const refused = await until(async () => {
      const err = await failure(b.store("ServiceAccount").create("team-a", serviceAccount({ name: `late-${Date.now()}`, namespace: "team-a" }), {})).catch(() => undefined);
      return err?.code === "FORBIDDEN" ? err : undefined;
    }, "replica b refusing content in the namespace a deleted");
    expect(refused.causes?.[0]?.reason).toBe("NamespaceTerminating");
    a.registry.close();
    b.registry.close();
  });

  it("reads a namespace's state from its stored text", () => {
    expect(stateOf(JSON.stringify(namespaceObject({ name: "a" })))).toBe("active");
    expect(stateOf('{"metadata":{"name":"a","deletionTimestamp":"2026-11-28T00:00:00Z"}}')).toBe("terminating");
    // A label value that mentions the field is no deletion.
    expect(stateOf('{"metadata":{"name":"a","labels":{"x":"\\"deletionTimestamp\\""}}}')).toBe("active");
    // Unreadable: left to storage's read, which reports it.
    expect(stateOf('{"deletionTimestamp"')).toBeUndefined();
  });
});

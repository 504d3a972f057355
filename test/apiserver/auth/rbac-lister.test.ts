// The storage-backed RBAC lister: initial list, following writes and deletes, relisting after a broken watch.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../../src/api/meta.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { StorageRbacLister } from "../../../src/apiserver/auth/rbac-lister.js";
import type { Storage, StorageEvent, Watch, WatchOptions } from "../../../src/apiserver/storage/types.js";
import { isPlatformError, PlatformError } from "../../../src/errors.js";
import { registryFixture } from "../fixtures.js";
import { clusterRole, clusterRoleBinding, rule, user, userSubject } from "./fixtures.js";
import { until } from "../../fixtures/wait.js";

const ADMIN = { username: "root", groups: ["system:masters"] };

/** A storage whose watches can be broken: events stop and onError fires, as after a compaction. */
function breakable(inner: Storage) {
  const live: { onError?: (err: Error) => void; broken: boolean }[] = [];
  const storage: Storage = Object.assign(Object.create(inner) as Storage, {
    list: inner.list.bind(inner),
    watch(prefix: string, options: WatchOptions, onEvent: (e: StorageEvent) => void, onError?: (err: Error) => void): Watch {
      const entry = { onError, broken: false };
      live.push(entry);
      const w = inner.watch(prefix, options, (e) => void (entry.broken || onEvent(e)), onError);
      return { cancel: () => w.cancel() };
    },
  });
  const breakAll = () => {
    for (const e of live.splice(0)) {
      e.broken = true;
      e.onError?.(new PlatformError("GONE", "watch expired"));
    }
  };
  return { storage, breakAll };
}

async function setup() {
  const f = await registryFixture();
  const write = (obj: ApiObject) => f.store(obj.kind).create(obj.metadata.namespace, obj, { user: ADMIN });
  return { ...f, write };
}

describe("StorageRbacLister", () => {
  it("lists what exists at start and follows later writes and deletes", async () => {
    const f = await setup();
    await f.write(clusterRole("reader", [rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })]));
    const lister = new StorageRbacLister({ storage: f.storage, names: f.names, clock: f.clock });
    await lister.start();
    try {
      expect(lister.clusterRoles().map((r) => r.metadata.name)).toEqual(["reader"]);
      const before = lister.version();
      await f.write(clusterRoleBinding("readers", "reader", [userSubject("bob")]));
      await until(() => lister.clusterRoleBindings().length === 1);
      expect(lister.version()).toBeGreaterThan(before);
      await f.store("ClusterRoleBinding").delete(undefined, "readers", { user: ADMIN });
      await until(() => lister.clusterRoleBindings().length === 0);
    } finally {
      lister.stop();
    }
  });

  it("lets the RBAC authorizer see a new binding without a restart", async () => {
    const f = await setup();
    const lister = new StorageRbacLister({ storage: f.storage, names: f.names, clock: f.clock });
    await lister.start();
    try {
      const rbac = new RbacAuthorizer({ lister, names: f.names });
      const attrs = { user: user(), verb: "get", resourceRequest: true, group: "", resource: "pods", namespace: "default", name: "p" };
      expect(rbac.authorize(attrs).allowed).toBe(false);
      await f.write(clusterRole("reader", [rule({ apiGroups: [""], resources: ["pods"], verbs: ["get"] })]));
      await f.write({ ...clusterRoleBinding("readers", "reader", [userSubject("bob")]) });
      await until(() => rbac.authorize(attrs).allowed);
    } finally {
      lister.stop();
    }
  });

  it("lists again after its watch breaks, catching up on writes it missed", async () => {
    const f = await setup();
    const b = breakable(f.storage);
    const lister = new StorageRbacLister({ storage: b.storage, names: f.names, clock: f.clock, retryMs: 500 });
    await lister.start();
    try {
      b.breakAll();
      await f.write(clusterRole("late", []));
      await new Promise((r) => setImmediate(r));
      expect(lister.clusterRoles()).toEqual([]);
      f.clock.tick(500);
      await until(() => lister.clusterRoles().length === 1);
    } finally {
      lister.stop();
    }
  });

  it("rejects start() when the first list fails", async () => {
    const f = await setup();
    const failing = Object.assign(Object.create(f.storage) as Storage, { list: () => Promise.reject(new PlatformError("STORAGE_UNAVAILABLE", "down")) });
    const err = await new StorageRbacLister({ storage: failing, names: f.names }).start().catch((e: unknown) => e);
    expect(isPlatformError(err, "STORAGE_UNAVAILABLE")).toBe(true);
  });
});

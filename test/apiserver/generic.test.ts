import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { listCollection } from "../../src/apiserver/registry/list.js";
import { failure, registryFixture } from "./fixtures.js";
import { controllerRevision, namespaceObject, serviceAccount } from "../fixtures/objects.js";

const admin = { username: "alice", groups: ["devs"] };

describe("create", () => {
  it("sets uid, resourceVersion, generation, creationTimestamp and the field manager", async () => {
    const { store, clock } = await registryFixture();
    const r = await store("ServiceAccount").create("default", serviceAccount({ namespace: "default", automount: false }), { fieldManager: "kubectl-create", user: admin });
    expect(r.code).toBe(201);
    const m = r.object.metadata;
    expect(m.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(m.generation).toBe(1);
    expect(m.creationTimestamp).toBe(new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"));
    expect(Number(m.resourceVersion)).toBeGreaterThan(0);
    expect(m.managedFields).toEqual([
      { manager: "kubectl-create", operation: "Update", apiVersion: "v1", time: m.creationTimestamp, fieldsType: "FieldsV1", fieldsV1: { "f:automountServiceAccountToken": {} } },
    ]);
    const again = await store("ServiceAccount").get("default", "builder");
    expect(again.object).toEqual(r.object);
  });

  it("ignores client-set server fields", async () => {
    const { store } = await registryFixture();
    const body = serviceAccount({});
    Object.assign(body.metadata, { uid: "mine", generation: 9, creationTimestamp: "2000-01-01T00:00:00Z", deletionTimestamp: "2000-01-01T00:00:00Z" });
    const m = (await store("ServiceAccount").create("default", body, {})).object.metadata;
    expect([m.uid === "mine", m.generation, m.creationTimestamp?.startsWith("2000"), m.deletionTimestamp]).toEqual([false, 1, false, undefined]);
  });

  it("refuses a second object of the same name with AlreadyExists", async () => {
    const { store } = await registryFixture();
    await store("ServiceAccount").create("default", serviceAccount({}), {});
    const err = await failure(store("ServiceAccount").create("default", serviceAccount({}), {}));
    expect([err.code, err.httpStatus, err.message]).toEqual(["ALREADY_EXISTS", 409, 'serviceaccounts "builder" already exists']);
    expect(err.details).toMatchObject({ name: "builder", kind: "serviceaccounts" });
  });

  it("generates a name from generateName", async () => {
    const { store } = await registryFixture();
    const r = await store("ServiceAccount").create("default", serviceAccount({ generateName: "worker-" }), {});
    expect(r.object.metadata.name).toMatch(/^worker-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it("cuts a long generateName to 58 characters before the suffix, as upstream, so the name is still valid", async () => {
    const { store } = await registryFixture();
    const r = await store("ServiceAccount").create("default", serviceAccount({ generateName: `${"w".repeat(70)}-` }), {});
    expect(r.object.metadata.name).toMatch(/^w{58}[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(r.object.metadata.generateName).toBe(`${"w".repeat(70)}-`);
  });

  it.each([
    ["a missing namespace", "nowhere", serviceAccount({}), "NOT_FOUND", 'namespaces "nowhere" not found'],
    ["a namespace that differs from the path", "default", serviceAccount({ namespace: "other" }), "BAD_REQUEST", "does not match the namespace"],
    ["a kind of another endpoint", "default", { ...serviceAccount({}), kind: "Secret" }, "BAD_REQUEST", "do not match the endpoint (v1, ServiceAccount)"],
    ["a wrong apiVersion", "default", { ...serviceAccount({}), apiVersion: "v2" }, "BAD_REQUEST", "do not match the endpoint"],
    ["another kind without an apiVersion", "default", { kind: "Secret", metadata: { name: "x" } }, "BAD_REQUEST", "(v1, Secret) do not match the endpoint"],
    ["an invalid name", "default", serviceAccount({ name: "Not_Valid" }), "INVALID", 'ServiceAccount "Not_Valid" is invalid: metadata.name'],
    ["no name at all", "default", { apiVersion: "v1", kind: "ServiceAccount", metadata: {} }, "INVALID", "metadata.name"],
    ["an invalid label key", "default", serviceAccount({ labels: { "-bad": "x" } }), "INVALID", "metadata.labels"],
    ["a label value over 63 characters", "default", serviceAccount({ labels: { a: "x".repeat(64) } }), "INVALID", "metadata.labels[a]"],
    ["annotations over 256 KiB", "default", serviceAccount({ annotations: { a: "x".repeat(256 * 1024) } }), "INVALID", "Too long"],
    ["a non-object body", "default", [1, 2], "BAD_REQUEST", "must be a JSON or YAML object"],
    ["a numeric name", "default", { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: 5 } }, "INVALID", "metadata.name: must be a string"],
  ])("refuses %s and stores nothing", async (_what, ns, body, code, words) => {
    const { store, storage } = await registryFixture();
    const before = await storage.revision();
    const err = await failure(store("ServiceAccount").create(ns, body, {}));
    expect(err.code).toBe(code);
    expect(err.message).toContain(words);
    expect(await storage.revision()).toBe(before);
  });

  it("lists field causes on Invalid", async () => {
    const { store } = await registryFixture();
    const err = await failure(store("ServiceAccount").create("default", serviceAccount({ name: "UPPER", labels: { a: "-x" } }), {}));
    expect(err.causes.map((c) => c.field)).toEqual(["metadata.name", "metadata.labels[a]"]);
  });

  it("stores nothing on dryRun and answers 201 with the would-be object (as upstream)", async () => {
    const { store, storage } = await registryFixture();
    const before = await storage.revision();
    const r = await store("ServiceAccount").create("default", serviceAccount({}), { dryRun: true });
    expect([r.code, r.object.metadata.name, r.object.metadata.resourceVersion]).toEqual([201, "builder", undefined]);
    expect(await storage.revision()).toBe(before);
    await expect(store("ServiceAccount").get("default", "builder")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("clears metadata.namespace of cluster-scoped objects", async () => {
    const { store } = await registryFixture();
    const r = await store("Namespace").create(undefined, namespaceObject({ namespace: "whatever" }), {});
    expect(r.object.metadata.namespace).toBeUndefined();
  });
});

describe("update and optimistic concurrency", () => {
  async function withAccount() {
    const f = await registryFixture();
    const created = (await f.store("ServiceAccount").create("default", serviceAccount({ automount: false }), { fieldManager: "one" })).object;
    return { ...f, created, sa: f.store("ServiceAccount") };
  }

  it("refuses a stale resourceVersion with Conflict", async () => {
    const { sa, created } = await withAccount();
    await sa.update("default", "builder", { ...created, automountServiceAccountToken: true }, {});
    const err = await failure(sa.update("default", "builder", { ...created, automountServiceAccountToken: false }, {}));
    expect([err.code, err.httpStatus]).toEqual(["CONFLICT", 409]);
    expect(err.message).toContain("the object has been modified");
  });

  it("applies an update without resourceVersion unconditionally", async () => {
    const { sa, created } = await withAccount();
    await sa.update("default", "builder", { ...created, automountServiceAccountToken: true }, {});
    const body = serviceAccount({ automount: false, labels: { x: "y" } });
    const r = await sa.update("default", "builder", body, {});
    expect(r.object.metadata.labels).toEqual({ x: "y" });
    expect(r.object.metadata.uid).toBe(created.metadata.uid);
  });

  it("does not create on update", async () => {
    const { sa } = await withAccount();
    const err = await failure(sa.update("default", "ghost", serviceAccount({ name: "ghost" }), {}));
    expect([err.code, err.message]).toEqual(["NOT_FOUND", 'serviceaccounts "ghost" not found']);
  });

  it("refuses a body whose name differs from the path", async () => {
    const { sa, created } = await withAccount();
    const err = await failure(sa.update("default", "builder", { ...created, metadata: { ...created.metadata, name: "other" } }, {}));
    expect(err.code).toBe("BAD_REQUEST");
  });

  it("keeps the resourceVersion of a no-op update", async () => {
    const { sa, created } = await withAccount();
    const r = await sa.update("default", "builder", structuredClone(created), { fieldManager: "one" });
    expect(r.object.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
  });

  it("bumps generation when the strategy says the spec changed, and keeps server fields", async () => {
    const { sa, created } = await withAccount();
    const body = structuredClone(created);
    body.automountServiceAccountToken = true;
    body.metadata.uid = created.metadata.uid;
    body.metadata.creationTimestamp = "1999-01-01T00:00:00Z";
    const r = await sa.update("default", "builder", body, { fieldManager: "two" });
    expect(r.object.metadata.generation).toBe(2);
    expect(r.object.metadata.creationTimestamp).toBe(created.metadata.creationTimestamp);
    // "two" took the one field "one" owned, so "one" owns nothing and its entry goes, as upstream.
    expect(r.object.metadata.managedFields?.map((e) => [e.manager, e.fieldsV1])).toEqual([["two", { "f:automountServiceAccountToken": {} }]]);
  });

  it("runs the strategy's update rules (immutable data) and stores nothing", async () => {
    const { store, storage } = await registryFixture();
    const cr = store("ControllerRevision");
    const created = (await cr.create("default", controllerRevision({ data: { a: 1 } }), {})).object;
    const before = await storage.revision();
    const err = await failure(cr.update("default", "rev-1", { ...created, data: { a: 2 } }, {}));
    expect(err.code).toBe("INVALID");
    expect(await storage.revision()).toBe(before);
  });

  it("patches through a mutation and treats a patched resourceVersion as a precondition", async () => {
    const { sa, created } = await withAccount();
    const r = await sa.patch("default", "builder", (cur) => ({ ...cur, automountServiceAccountToken: true }), {});
    expect(r.object.automountServiceAccountToken).toBe(true);
    const err = await failure(sa.patch("default", "builder", (cur) => ({ ...cur, metadata: { ...cur.metadata, resourceVersion: created.metadata.resourceVersion } }), {}));
    expect(err.code).toBe("CONFLICT");
  });
});

describe("delete", () => {
  it("deletes and reports the object; a second delete is NotFound", async () => {
    const { store } = await registryFixture();
    const sa = store("ServiceAccount");
    await sa.create("default", serviceAccount({}), {});
    const r = await sa.delete("default", "builder", {});
    expect([r.deleted, r.object.metadata.name]).toEqual([true, "builder"]);
    expect(sa.deletedStatus(r)).toMatchObject({ kind: "Status", status: "Success", details: { name: "builder", kind: "serviceaccounts" } });
    expect((await failure(sa.delete("default", "builder", {}))).code).toBe("NOT_FOUND");
  });

  it("keeps an object with finalizers until the last one is removed", async () => {
    const { store, clock } = await registryFixture();
    const sa = store("ServiceAccount");
    await sa.create("default", serviceAccount({ finalizers: ["example.com/hold", "example.com/two"] }), {});
    clock.tick(5000);
    const r = await sa.delete("default", "builder", {});
    expect(r.deleted).toBe(false);
    expect(r.object.metadata.deletionTimestamp).toBe(new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"));
    const again = await sa.delete("default", "builder", {});
    expect(again.object.metadata.deletionTimestamp).toBe(r.object.metadata.deletionTimestamp);
    await sa.patch("default", "builder", (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: ["example.com/two"] } }), {});
    expect((await sa.get("default", "builder")).object.metadata.finalizers).toEqual(["example.com/two"]);
    await sa.patch("default", "builder", (cur) => ({ ...cur, metadata: { ...cur.metadata, finalizers: [] } }), {});
    expect((await failure(sa.get("default", "builder"))).code).toBe("NOT_FOUND");
  });

  it.each([
    ["uid", { uid: "not-it" }, "UID in precondition"],
    ["resourceVersion", { resourceVersion: "1" }, "ResourceVersion in precondition"],
  ])("refuses a delete whose %s precondition does not hold", async (_f, preconditions, words) => {
    const { store } = await registryFixture();
    const sa = store("ServiceAccount");
    await sa.create("default", serviceAccount({}), {});
    const err = await failure(sa.delete("default", "builder", { preconditions }));
    expect([err.code, err.message.includes(words)]).toEqual(["CONFLICT", true]);
    expect((await sa.get("default", "builder")).object.metadata.name).toBe("builder");
  });

  it("keeps the object on a dryRun delete", async () => {
    const { store } = await registryFixture();
    const sa = store("ServiceAccount");
    await sa.create("default", serviceAccount({}), {});
    expect((await sa.delete("default", "builder", { dryRun: true })).deleted).toBe(true);
    expect((await sa.get("default", "builder")).object.metadata.name).toBe("builder");
  });
});

describe("list", () => {
  async function accounts(n: number) {
    const f = await registryFixture();
    const sa = f.store("ServiceAccount");
    for (let i = 0; i < n; i++) await sa.create("default", serviceAccount({ name: `sa-${i}`, labels: { parity: i % 2 ? "odd" : "even" } }), {});
    return { ...f, sa };
  }
  const names = (items: readonly { object: ApiObject }[]) => items.map((i) => i.object.metadata.name);

  it("pages with limit and continue over one snapshot", async () => {
    const { sa, storage } = await accounts(5);
    const prefix = sa.prefix("default");
    const p1 = await listCollection(storage, undefined, prefix, { limit: 2 });
    expect(names(p1.items)).toEqual(["sa-0", "sa-1"]);
    expect(p1.remainingItemCount).toBe(3);
    await sa.create("default", serviceAccount({ name: "sa-00" }), {});
    await sa.delete("default", "sa-3", {});
    const p2 = await listCollection(storage, undefined, prefix, { limit: 2, continue: p1.continue });
    expect(names(p2.items)).toEqual(["sa-2", "sa-3"]);
    expect(p2.revision).toBe(p1.revision);
    const p3 = await listCollection(storage, undefined, prefix, { limit: 2, continue: p2.continue });
    expect([names(p3.items), p3.continue]).toEqual([["sa-4"], undefined]);
  });

  it("reads only the one key of a name selector's object (upstream's single-object list), the others not at all", async () => {
    const { sa, storage } = await accounts(5);
    const calls = { list: 0, get: 0 };
    const counted = new Proxy(storage, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === "list" || prop === "get") calls[prop]++;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const byName = (name: string) => (o: ApiObject) => o.metadata.name === name;
    const one = await listCollection(counted, undefined, sa.prefix("default"), { name: "sa-3", single: true, filter: byName("sa-3") });
    expect(names(one.items)).toEqual(["sa-3"]);
    expect(one.revision).toBe(await storage.revision());
    expect([one.continue, one.remainingItemCount]).toEqual([undefined, undefined]);
    // The selector's other requirements still decide; a missing name lists nothing.
    expect((await listCollection(counted, undefined, sa.prefix("default"), { name: "sa-3", single: true, filter: (o) => byName("sa-3")(o) && o.metadata.labels?.parity === "even" })).items).toEqual([]);
    expect((await listCollection(counted, undefined, sa.prefix("default"), { name: "nope", single: true, filter: byName("nope") })).items).toEqual([]);
    expect(calls).toEqual({ list: 0, get: 3 });
    // Every namespace (not single): the collection is read, each other object passed over by its key.
    const all = await listCollection(counted, undefined, sa.prefix(), { name: "sa-3", filter: byName("sa-3") });
    expect(names(all.items)).toEqual(["sa-3"]);
    expect(calls.list).toBe(1);
  });

  it("fills pages with matching items when a selector filters", async () => {
    const { sa, storage } = await accounts(7);
    const filter = (o: ApiObject) => o.metadata.labels?.parity === "odd";
    const p1 = await listCollection(storage, undefined, sa.prefix("default"), { limit: 2, filter });
    expect(names(p1.items)).toEqual(["sa-1", "sa-3"]);
    expect(p1.remainingItemCount).toBeUndefined();
    const p2 = await listCollection(storage, undefined, sa.prefix("default"), { limit: 2, filter, continue: p1.continue });
    expect(names(p2.items)).toEqual(["sa-5"]);
  });

  it("answers 410 Expired telling to relist when the continue snapshot was compacted", async () => {
    const { sa, storage } = await accounts(3);
    const p1 = await listCollection(storage, undefined, sa.prefix("default"), { limit: 1 });
    await sa.create("default", serviceAccount({ name: "later" }), {});
    await storage.compact(await storage.revision());
    const err = await failure(listCollection(storage, undefined, sa.prefix("default"), { limit: 1, continue: p1.continue }));
    expect([err.code, err.httpStatus, err.reason]).toEqual(["GONE", 410, "Expired"]);
    expect(err.message).toContain("start a new list");
  });

  it("reads an exact older revision", async () => {
    const { sa, storage } = await accounts(2);
    const rev = await storage.revision();
    await sa.create("default", serviceAccount({ name: "sa-9" }), {});
    const page = await listCollection(storage, undefined, sa.prefix("default"), { resourceVersion: String(rev), resourceVersionMatch: "Exact" });
    expect(names(page.items)).toEqual(["sa-0", "sa-1"]);
  });

  it.each([
    [{ resourceVersionMatch: "Exact" as const }, "forbidden unless resourceVersion"],
    [{ resourceVersion: "0", resourceVersionMatch: "Exact" as const }, 'forbidden for resourceVersion "0"'],
    [{ resourceVersion: "abc" }, "expected a decimal revision"],
    [{ continue: "%%%" }, "invalid continue token"],
    [{ continue: Buffer.from('{"v":1}').toString("base64url") }, "not a token issued by this server"],
    [{ continue: Buffer.from('{"v":1,"rv":3,"start":"x"}').toString("base64url"), resourceVersion: "3" }, "not allowed when using continue"],
  ])("refuses list parameters %j with a 400", async (q, words) => {
    const { sa, storage } = await accounts(1);
    const err = await failure(listCollection(storage, undefined, sa.prefix("default"), q));
    expect([err.httpStatus, err.message.includes(words)]).toEqual([400, true]);
  });
});

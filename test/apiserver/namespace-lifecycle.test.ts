// A namespace's deletion as upstream's: marked Terminating, no new content, its content deleted, then finalized away.
import { describe, expect, it } from "vitest";
import type { ApiObject } from "../../src/api/meta.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import { Leftovers, mergeConditions } from "../../src/apiserver/registry/namespace-conditions.js";
import { failure, FakeClock, registryFixture, serverFixture } from "./fixtures.js";
import { namespaceObject, serviceAccount } from "../fixtures/objects.js";
import { MemoryAuditSink } from "../../src/audit/memory-sink.js";
import { parseAuditPolicy } from "../../src/config/audit-policy.js";

const secret = (name: string, namespace: string): ApiObject => ({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace }, stringData: { token: "t" } });

async function withContent() {
  const fx = await registryFixture();
  await fx.store("Namespace").create(undefined, namespaceObject({ name: "team-a" }), {});
  await fx.store("Namespace").create(undefined, namespaceObject({ name: "team-ab" }), {});
  for (const name of ["one", "two", "three"]) await fx.store("ServiceAccount").create("team-a", serviceAccount({ name, namespace: "team-a" }), {});
  await fx.store("Secret").create("team-a", secret("key", "team-a"), {});
  // A namespace whose name starts with the other's: its objects are not the other's content.
  await fx.store("ServiceAccount").create("team-ab", serviceAccount({ name: "one", namespace: "team-ab" }), {});
  const count = async (ns: string) => (await fx.storage.list(`/core/serviceaccounts/${ns}/`)).items.length + (await fx.storage.list(`/core/secrets/${ns}/`)).items.length;
  return { ...fx, count };
}

describe("namespace deletion", () => {
  it("starts every namespace with the kubernetes finalizer and the Active phase", async () => {
    const { store } = await registryFixture();
    const created = (await store("Namespace").create(undefined, namespaceObject({ name: "n1" }), {})).object;
    expect([created.spec, created.status]).toEqual([{ finalizers: ["kubernetes"] }, { phase: "Active" }]);
    const extra = (await store("Namespace").create(undefined, { ...namespaceObject({ name: "n2" }), spec: { finalizers: ["example.com/x"] } }, {})).object;
    expect(extra.spec).toEqual({ finalizers: ["example.com/x", "kubernetes"] });
  });

  it("marks the namespace Terminating, refuses new content, deletes what it holds, then removes it", async () => {
    const { store, clock, count } = await withContent();
    const first = await store("Namespace").delete(undefined, "team-a", {});
    expect(first.deleted).toBe(false);
    expect(first.object.status).toEqual({ phase: "Terminating" });
    expect(first.object.metadata.deletionTimestamp).toBe(new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"));
    // A second delete while it empties answers the namespace as it is, as upstream (not an error).
    const second = await store("Namespace").delete(undefined, "team-a", {});
    expect([second.deleted, second.object.metadata.deletionTimestamp]).toEqual([false, first.object.metadata.deletionTimestamp]);
    const refused = await failure(store("ServiceAccount").create("team-a", serviceAccount({ name: "late", namespace: "team-a" }), {}));
    expect([refused.code, refused.httpStatus, refused.message]).toEqual([
      "FORBIDDEN",
      403,
      'serviceaccounts "late" is forbidden: unable to create new content in namespace team-a because it is being terminated',
    ]);
    expect(refused.causes).toEqual([{ reason: "NamespaceTerminating", message: "namespace team-a is being terminated", field: "metadata.namespace" }]);
    expect(await count("team-a")).toBe(4);
    await clock.advance(0);
    expect(await count("team-a")).toBe(0);
    expect((await failure(store("Namespace").get(undefined, "team-a"))).code).toBe("NOT_FOUND");
    expect(await count("team-ab")).toBe(1);
    // The name is free again, and a namespace made with it starts empty.
    await store("Namespace").create(undefined, namespaceObject({ name: "team-a" }), {});
    expect(await count("team-a")).toBe(0);
  });

  it("waits for content held by a finalizer, and ends once it is released", async () => {
    const { store, clock, count } = await withContent();
    await store("ServiceAccount").create("team-a", serviceAccount({ name: "held", namespace: "team-a", finalizers: ["example.com/hold"] }), {});
    await store("Namespace").delete(undefined, "team-a", {});
    await clock.advance(0);
    expect(await count("team-a")).toBe(1);
    const held = (await store("ServiceAccount").get("team-a", "held")).object;
    expect(held.metadata.deletionTimestamp).toBeDefined();
    const terminating = (await store("Namespace").get(undefined, "team-a")).object;
    // Its status says what holds it, in upstream's words (kubectl describe shows them).
    const since = new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z");
    const conditions = [
      { type: "NamespaceDeletionContentFailure", status: "False", reason: "ContentDeleted", message: "All content successfully deleted, may be waiting on finalization", lastTransitionTime: since },
      { type: "NamespaceContentRemaining", status: "True", reason: "SomeResourcesRemain", message: "Some resources are remaining: serviceaccounts. has 1 resource instances", lastTransitionTime: since },
      { type: "NamespaceFinalizersRemaining", status: "True", reason: "SomeFinalizersRemain", message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances", lastTransitionTime: since },
    ];
    expect(terminating.status).toEqual({ phase: "Terminating", conditions });
    // Tried again later and still held: the same conditions, their transition times kept.
    await clock.advance(1_000);
    expect((await store("Namespace").get(undefined, "team-a")).object.status).toEqual({ phase: "Terminating", conditions });
    // Other writes to it keep it while its finalizer does.
    await store("Namespace").update(undefined, "team-a", { ...terminating, metadata: { ...terminating.metadata, labels: { late: "label" } } }, {});
    expect((await store("Namespace").get(undefined, "team-a")).object.metadata.labels).toEqual({ late: "label" });
    // Releasing the finalizer deletes the account; the namespace goes at the next try.
    await store("ServiceAccount").update("team-a", "held", { ...held, metadata: { ...held.metadata, finalizers: [] } }, {});
    await clock.advance(60_000);
    expect((await failure(store("Namespace").get(undefined, "team-a"))).code).toBe("NOT_FOUND");
  });

  it("refuses to delete the namespaces the platform lives in", async () => {
    const { store } = await registryFixture();
    for (const name of ["default", "platform-system"]) {
      const err = await failure(store("Namespace").delete(undefined, name, {}));
      expect([err.code, err.httpStatus, err.message]).toEqual(["FORBIDDEN", 403, `namespaces "${name}" is forbidden: this namespace may not be deleted`]);
      const ns = (await store("Namespace").get(undefined, name)).object;
      expect([ns.metadata.deletionTimestamp, ns.status]).toEqual([undefined, { phase: "Active" }]);
    }
  });

  it("changes finalizers only through /finalize, and keeps the phase in step with the deletion", async () => {
    const { store } = await withContent();
    const ns = (await store("Namespace").get(undefined, "team-a")).object;
    const updated = (await store("Namespace").update(undefined, "team-a", { ...ns, spec: { finalizers: [] }, metadata: { ...ns.metadata, labels: { a: "b" } } }, {})).object;
    expect([updated.spec, updated.metadata.labels]).toEqual([{ finalizers: ["kubernetes"] }, { a: "b" }]);
    const bad = await failure(store("Namespace").update(undefined, "team-a", { ...updated, status: { phase: "Terminating" } }, { subresource: "status" }));
    expect(bad.message).toContain("status.phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty");
    const finalized = (await store("Namespace").update(undefined, "team-a", { ...updated, spec: { finalizers: ["example.com/x"] } }, { subresource: "finalize" })).object;
    expect(finalized.spec).toEqual({ finalizers: ["example.com/x"] });
  });

  it("a dry run marks nothing", async () => {
    const { store, clock, count } = await withContent();
    const r = await store("Namespace").delete(undefined, "team-a", { dryRun: true });
    expect(r.object.status).toEqual({ phase: "Terminating" });
    await clock.advance(0);
    expect((await store("Namespace").get(undefined, "team-a")).object.metadata.deletionTimestamp).toBeUndefined();
    expect(await count("team-a")).toBe(4);
  });

  it("resumes a deletion the last run left half-way, and removes a namespace stored without the finalizer", async () => {
    const clock = new FakeClock();
    const storage = new MemoryStorage({ clock });
    const before = await registryFixture({ clock, storage });
    await before.store("Namespace").create(undefined, namespaceObject({ name: "old" }), {});
    await before.store("ServiceAccount").create("old", serviceAccount({ name: "a", namespace: "old" }), {});
    // As a store written before namespaces had their finalizer.
    const kv = (await storage.get("/core/namespaces/old"))!;
    const legacy = JSON.parse(kv.value) as ApiObject;
    delete legacy.spec;
    await storage.update("/core/namespaces/old", JSON.stringify(legacy), kv.modRevision);
    before.registry.close();
    await before.store("Namespace").delete(undefined, "old", {});
    expect((await before.store("ServiceAccount").get("old", "a")).object.metadata.name).toBe("a");
    // A new server over the same store finishes the work.
    const after = await registryFixture({ clock, storage });
    await clock.advance(0);
    expect((await failure(after.store("ServiceAccount").get("old", "a"))).code).toBe("NOT_FOUND");
    expect((await failure(after.store("Namespace").get(undefined, "old"))).code).toBe("NOT_FOUND");
    after.registry.close();
  });

  it("takes up, within a minute, a namespace another server marked and did not finish", async () => {
    const clock = new FakeClock();
    const storage = new MemoryStorage({ clock });
    const [one, two] = [await registryFixture({ clock, storage }), await registryFixture({ clock, storage })];
    await one.store("Namespace").create(undefined, namespaceObject({ name: "shared" }), {});
    await one.store("ServiceAccount").create("shared", serviceAccount({ name: "a", namespace: "shared" }), {});
    one.registry.close();
    await one.store("Namespace").delete(undefined, "shared", {});
    await clock.advance(1_000);
    expect((await two.store("Namespace").get(undefined, "shared")).object.status).toEqual({ phase: "Terminating" });
    await clock.advance(60_000);
    expect((await failure(two.store("Namespace").get(undefined, "shared"))).code).toBe("NOT_FOUND");
    expect((await failure(two.store("ServiceAccount").get("shared", "a"))).code).toBe("NOT_FOUND");
    two.registry.close();
  });
});

describe("namespace deletion over HTTP", () => {
  it("answers the Terminating namespace, refuses new content with upstream's Status, and the namespace goes", async () => {
    const server = await serverFixture();
    try {
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${server.address}${path}`, { method, headers: { "content-type": "application/json" }, ...(body !== undefined && { body: JSON.stringify(body) }) });
        return { status: res.status, body: (await res.json()) as Record<string, any> };
      };
      expect((await call("POST", "/api/v1/namespaces", namespaceObject({ name: "web" }))).status).toBe(201);
      expect((await call("POST", "/api/v1/namespaces/web/serviceaccounts", serviceAccount({ name: "a" }))).status).toBe(201);
      const finalize = await call("PUT", "/api/v1/namespaces/web/finalize", { ...namespaceObject({ name: "web" }), spec: { finalizers: ["kubernetes", "example.com/x"] } });
      expect([finalize.status, finalize.body.spec]).toEqual([200, { finalizers: ["kubernetes", "example.com/x"] }]);
      const deleted = await call("DELETE", "/api/v1/namespaces/web");
      expect([deleted.status, deleted.body.kind, deleted.body.status]).toEqual([200, "Namespace", { phase: "Terminating" }]);
      const refused = await call("POST", "/api/v1/namespaces/web/serviceaccounts", serviceAccount({ name: "b" }));
      expect(refused).toMatchObject({
        status: 403,
        body: { kind: "Status", reason: "Forbidden", code: 403, details: { name: "b", kind: "serviceaccounts", causes: [{ reason: "NamespaceTerminating", field: "metadata.namespace" }] } },
      });
      // The content goes; the namespace waits for the other finalizer, then goes once /finalize takes it off.
      const deadline = Date.now() + 10_000;
      while ((await call("GET", "/api/v1/namespaces/web/serviceaccounts/a")).status !== 404 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect((await call("GET", "/api/v1/namespaces/web/serviceaccounts/a")).status).toBe(404);
      const held = await call("GET", "/api/v1/namespaces/web");
      expect(held.body.spec).toEqual({ finalizers: ["example.com/x"] });
      expect((await call("PUT", "/api/v1/namespaces/web/finalize", { ...held.body, spec: { finalizers: [] } })).status).toBe(200);
      expect((await call("GET", "/api/v1/namespaces/web")).status).toBe(404);
      // As upstream, namespaces have no deletecollection: one call does not empty every namespace.
      expect(await call("DELETE", "/api/v1/namespaces")).toMatchObject({ status: 405, body: { kind: "Status", reason: "MethodNotAllowed" } });
      const discovery = await call("GET", "/api/v1");
      const namespaces = discovery.body.resources.filter((r: { name: string }) => r.name.startsWith("namespaces"));
      expect(namespaces.map((r: { name: string; verbs: string[] }) => [r.name, [...r.verbs].sort()]).sort()).toEqual([
        ["namespaces", ["create", "delete", "get", "list", "patch", "update", "watch"]],
        ["namespaces/finalize", ["update"]],
        ["namespaces/status", ["get", "patch", "update"]],
      ]);
    } finally {
      await server.stop();
    }
  });
});

describe("namespace deletion in the audit log", () => {
  it("records each content delete and the finalize as requests of system:apiserver, with their outcome", async () => {
    const sink = new MemoryAuditSink();
    const policy = parseAuditPolicy(JSON.stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] }), "policy").policy;
    const server = await serverFixture({ audit: { policy, sink } });
    try {
      const post = (path: string, body: unknown) => fetch(`${server.address}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      await post("/api/v1/namespaces", namespaceObject({ name: "audited" }));
      await post("/api/v1/namespaces/audited/serviceaccounts", serviceAccount({ name: "a" }));
      await post("/api/v1/namespaces/audited/secrets", secret("s", "audited"));
      await fetch(`${server.address}/api/v1/namespaces/audited`, { method: "DELETE" });
      const deadline = Date.now() + 10_000;
      while ((await fetch(`${server.address}/api/v1/namespaces/audited`)).status !== 404 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const own = sink.events.filter((e) => e.user.username === "system:apiserver" && e.stage === "ResponseComplete");
      expect(own.map((e) => [e.verb, e.requestURI, e.responseStatus?.code])).toEqual([
        ["delete", "/api/v1/namespaces/audited/serviceaccounts/a", 200],
        ["delete", "/api/v1/namespaces/audited/secrets/s", 200],
        ["update", "/api/v1/namespaces/audited/finalize", 200],
      ]);
      expect(own[1]).toMatchObject({ level: "Metadata", objectRef: { resource: "secrets", namespace: "audited", name: "s", apiGroup: "", apiVersion: "v1" }, userAgent: expect.stringContaining("namespace controller") });
      expect(own[2]!.objectRef).toEqual({ resource: "namespaces", name: "audited", apiGroup: "", apiVersion: "v1", subresource: "finalize" });
      // Each with its RequestReceived stage under the same audit ID, as a request's.
      for (const e of own) expect(sink.byId(e.auditID).map((x) => x.stage)).toEqual(["RequestReceived", "ResponseComplete"]);
    } finally {
      await server.stop();
    }
  });
});

describe("namespace deletion when the audit log cannot be written", () => {
  it("deletes nothing unaudited: the content waits, and goes once the log takes events again", async () => {
    const sink = new MemoryAuditSink();
    const policy = parseAuditPolicy(JSON.stringify({ apiVersion: "audit.platform.io/v1", kind: "Policy", rules: [{ level: "None", users: ["local-admin"] }, { level: "Metadata" }] }), "policy").policy;
    const server = await serverFixture({ audit: { policy, sink } });
    try {
      const at = (path: string, method = "GET", body?: unknown) => fetch(`${server.address}${path}`, { method, headers: { "content-type": "application/json" }, ...(body !== undefined && { body: JSON.stringify(body) }) });
      await at("/api/v1/namespaces", "POST", namespaceObject({ name: "blocked" }));
      await at("/api/v1/namespaces/blocked/secrets", "POST", secret("s", "blocked"));
      // Only the server's own writes are audited by this policy's rule; the sink now fails them.
      sink.failWith = new Error("disk full");
      expect((await at("/api/v1/namespaces/blocked", "DELETE")).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      expect((await at("/api/v1/namespaces/blocked/secrets/s")).status).toBe(200);
      sink.failWith = undefined;
      const deadline = Date.now() + 10_000;
      while ((await at("/api/v1/namespaces/blocked")).status !== 404 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await at("/api/v1/namespaces/blocked/secrets/s")).status).toBe(404);
      expect(sink.events.some((e) => e.requestURI === "/api/v1/namespaces/blocked/secrets/s" && e.stage === "ResponseComplete")).toBe(true);
    } finally {
      await server.stop();
    }
  });
});

describe("what a namespace being deleted reports", () => {
  it("names refused deletes, remaining resources and finalizers in sorted order, and keeps transition times", () => {
    const left = new Leftovers();
    left.add("secrets.", ["b.io/x", "a.io/y"]);
    left.add("leases.coordination.platform.io", [], 'leases.coordination.platform.io "l": refused by a webhook');
    left.add("secrets.", ["a.io/y"]);
    const conditions = left.conditions();
    expect(conditions.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ["NamespaceDeletionContentFailure", "True", "ContentDeletionFailed", 'Failed to delete all resource types, 1 remaining: leases.coordination.platform.io "l": refused by a webhook'],
      ["NamespaceContentRemaining", "True", "SomeResourcesRemain", "Some resources are remaining: leases.coordination.platform.io has 1 resource instances, secrets. has 2 resource instances"],
      ["NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: a.io/y in 2 resource instances, b.io/x in 1 resource instances"],
    ]);
    const first = mergeConditions([{ type: "Other", status: "True" }], conditions, "2030-01-01T00:00:00Z");
    const later = mergeConditions(first, [{ ...conditions[0]!, status: "False" }, conditions[1]!], "2030-01-01T00:05:00Z");
    expect(later.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ["Other", "True", undefined],
      ["NamespaceFinalizersRemaining", "True", "2030-01-01T00:00:00Z"],
      ["NamespaceDeletionContentFailure", "False", "2030-01-01T00:05:00Z"],
      ["NamespaceContentRemaining", "True", "2030-01-01T00:00:00Z"],
    ]);
  });
});

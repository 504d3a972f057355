import { describe, expect, it } from "vitest";
import { call, openWatch } from "./http-client.js";
import { FakeClock, SA_PATH, serverFixture, sharedServer, TABLE_ACCEPT } from "./fixtures.js";
import { serviceAccount } from "../fixtures/objects.js";

const shared = sharedServer();
const SA = SA_PATH;
const unique = shared.unique;

describe("watch", () => {
  it("streams the current state, then changes, as NDJSON", async () => {
    const name = unique("w");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const w = await openWatch(shared.base, `${SA}?watch=1&fieldSelector=metadata.name%3D${name}`);
    expect(w.status).toBe(200);
    expect(w.headers["content-type"]).toBe("application/json");
    expect(w.headers["transfer-encoding"]).toBe("chunked");
    expect(await w.next()).toMatchObject({ type: "ADDED", object: { metadata: { name } } });
    const patched = await call(shared.base, "PATCH", `${SA}/${name}`, { body: { metadata: { labels: { a: "b" } } }, contentType: "application/merge-patch+json" });
    const modified = await w.next();
    expect(modified).toMatchObject({ type: "MODIFIED", object: { metadata: { labels: { a: "b" } } } });
    expect(modified.object.metadata.resourceVersion).toBe(patched.body.metadata.resourceVersion);
    await call(shared.base, "DELETE", `${SA}/${name}`);
    expect(await w.next()).toMatchObject({ type: "DELETED", object: { metadata: { name } } });
    w.close();
  });

  it("watches one name in every namespace, and every name but one, with field selectors on metadata.name", async () => {
    const name = unique("wname");
    const other = unique("wother");
    const ns = unique("wns");
    await call(shared.base, "POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } } });
    const one = await openWatch(shared.base, `/api/v1/serviceaccounts?watch=1&fieldSelector=metadata.name%3D${name}`);
    const allBut = await openWatch(shared.base, `/api/v1/namespaces/${ns}/serviceaccounts?watch=1&fieldSelector=metadata.name!%3D${name}`);
    await call(shared.base, "POST", SA, { body: serviceAccount({ name: other }) });
    await call(shared.base, "POST", `/api/v1/namespaces/${ns}/serviceaccounts`, { body: serviceAccount({ name: other, namespace: ns }) });
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    await call(shared.base, "POST", `/api/v1/namespaces/${ns}/serviceaccounts`, { body: serviceAccount({ name, namespace: ns }) });
    expect(await one.next()).toMatchObject({ type: "ADDED", object: { metadata: { name, namespace: "default" } } });
    expect(await one.next()).toMatchObject({ type: "ADDED", object: { metadata: { name, namespace: ns } } });
    expect(await allBut.next()).toMatchObject({ type: "ADDED", object: { metadata: { name: other, namespace: ns } } });
    await call(shared.base, "DELETE", `${SA}/${other}`);
    await call(shared.base, "DELETE", `/api/v1/namespaces/${ns}/serviceaccounts/${other}`);
    expect(await allBut.next()).toMatchObject({ type: "DELETED", object: { metadata: { name: other, namespace: ns } } });
    await call(shared.base, "DELETE", `${SA}/${name}`);
    expect(await one.next()).toMatchObject({ type: "DELETED", object: { metadata: { name, namespace: "default" } } });
    one.close();
    allBut.close();
  });

  it("starts after a resourceVersion and turns selector exits into DELETED", async () => {
    const name = unique("wsel");
    const created = await call(shared.base, "POST", SA, { body: serviceAccount({ name, labels: { team: "x" } }) });
    const w = await openWatch(shared.base, `${SA}?watch=true&labelSelector=team%3Dx&resourceVersion=${created.body.metadata.resourceVersion}`);
    await call(shared.base, "PATCH", `${SA}/${name}`, { body: { metadata: { labels: { team: "y" } } }, contentType: "application/merge-patch+json" });
    expect(await w.next()).toMatchObject({ type: "DELETED", object: { metadata: { name } } });
    await call(shared.base, "PATCH", `${SA}/${name}`, { body: { metadata: { labels: { team: "x" } } }, contentType: "application/merge-patch+json" });
    expect(await w.next()).toMatchObject({ type: "ADDED", object: { metadata: { name, labels: { team: "x" } } } });
    w.close();
  });

  it("sends the initial-events-end bookmark for sendInitialEvents", async () => {
    const name = unique("wi");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const w = await openWatch(shared.base, `${SA}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&fieldSelector=metadata.name%3D${name}`);
    expect(await w.next()).toMatchObject({ type: "ADDED" });
    const end = await w.next();
    expect(end).toMatchObject({ type: "BOOKMARK", object: { kind: "ServiceAccount", metadata: { annotations: { "k8s.io/initial-events-end": "true" } } } });
    w.close();
  });

  it("answers a too-old resourceVersion with an ERROR event carrying 410 Expired, then closes", async () => {
    const sa = "/api/v1/namespaces/platform-system/serviceaccounts";
    const first = await call(shared.base, "POST", sa, { body: serviceAccount({ name: unique("old"), namespace: "platform-system" }) });
    const w0 = await openWatch(shared.base, `${sa}?watch=1`);
    await w0.next();
    w0.close();
    const small = await serverFixture({ watchCache: { capacity: 2 } });
    try {
      const path = "/api/v1/namespaces/default/serviceaccounts";
      const r1 = await call(small.address, "POST", path, { body: serviceAccount({ name: "a" }) });
      const warm = await openWatch(small.address, `${path}?watch=1`);
      await warm.next();
      for (const n of ["b", "c", "d", "e"]) await call(small.address, "POST", path, { body: serviceAccount({ name: n }) });
      await warm.next();
      warm.close();
      const w = await openWatch(small.address, `${path}?watch=1&resourceVersion=${r1.body.metadata.resourceVersion}`);
      const ev = await w.next();
      expect(ev).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
      await w.ended;
      expect(first.status).toBe(201);
    } finally {
      await small.stop();
    }
  });

  it("ends the stream after timeoutSeconds", async () => {
    const clock = new FakeClock();
    const timed = await serverFixture({ clock });
    try {
      await call(timed.address, "POST", SA, { body: serviceAccount({ name: "first" }) });
      const w = await openWatch(timed.address, `${SA}?watch=1&timeoutSeconds=30`);
      expect(await w.next()).toMatchObject({ type: "ADDED", object: { metadata: { name: "first" } } });
      clock.tick(29_000);
      await call(timed.address, "POST", SA, { body: serviceAccount({ name: "before-timeout" }) });
      expect(await w.next()).toMatchObject({ type: "ADDED", object: { metadata: { name: "before-timeout" } } });
      clock.tick(1_000);
      await w.ended;
      expect(await w.next()).toBeUndefined();
    } finally {
      await timed.stop();
    }
  });

  it("streams Table rows to kubectl get -w", async () => {
    const name = unique("wt");
    await call(shared.base, "POST", SA, { body: serviceAccount({ name }) });
    const w = await openWatch(shared.base, `${SA}?watch=1&fieldSelector=metadata.name%3D${name}`, { accept: TABLE_ACCEPT });
    const ev = await w.next();
    expect(ev).toMatchObject({ type: "ADDED", object: { kind: "Table", columnDefinitions: expect.any(Array) } });
    expect(ev.object.rows.map((r: any) => r.cells[0])).toEqual([name]);
    w.close();
  });

  it.each([
    ["sendInitialEvents=true", "requires resourceVersionMatch=NotOlderThan"],
    ["resourceVersionMatch=NotOlderThan&resourceVersion=1", "forbidden for watch"],
  ])("refuses watch parameters %s with 400 before streaming", async (query, words) => {
    const r = await call(shared.base, "GET", `${SA}?watch=1&${query}`);
    expect([r.status, r.body.message]).toEqual([400, expect.stringContaining(words)]);
  });
});

// Core v1 Events over HTTP: the same stored objects as the events group's, converted both ways, with core selectors.
import { describe, expect, it } from "vitest";
import { call, openWatch } from "./http-client.js";
import { newEvent, sharedServer, TABLE_ACCEPT } from "./fixtures.js";

const s = sharedServer();
const EVENTS = "/apis/events.platform.io/v1/namespaces/default/events";
const CORE = "/api/v1/namespaces/default/events";

describe("core v1 Events", () => {
  it("are listed in core v1 discovery with every verb", async () => {
    const r = await call(s.base, "GET", "/api/v1");
    const ev = r.body.resources.find((x: { name: string }) => x.name === "events");
    expect(ev).toMatchObject({ kind: "Event", namespaced: true, shortNames: ["ev"] });
    expect(ev.verbs).toEqual(expect.arrayContaining(["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]));
  });

  it("shows an events v1 Event in the core form, with the fields renamed as upstream converts them", async () => {
    const name = s.unique("ev");
    expect((await call(s.base, "POST", EVENTS, { body: newEvent(name, "csr-a") })).status).toBe(201);
    const r = await call(s.base, "GET", `${CORE}/${name}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      apiVersion: "v1",
      kind: "Event",
      involvedObject: { kind: "CertificateSigningRequest", name: "csr-a", uid: "uid-csr-a" },
      message: "issued",
      reason: "CertificateIssued",
      type: "Normal",
      action: "Sign",
      eventTime: "2030-01-02T03:04:05.000000Z",
      reportingComponent: "platform-ca-controller-manager",
      reportingInstance: "host-1",
    });
    expect(r.body).not.toHaveProperty("regarding");
    expect(r.body).not.toHaveProperty("note");
  });

  it("stores a core Event as events v1 (source, timestamps and count become the deprecated fields) and converts updates back", async () => {
    const name = s.unique("legacy");
    const core = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name },
      involvedObject: { kind: "Pod", namespace: "default", name: "p1" },
      reason: "Started",
      message: "started the container",
      source: { component: "kubelet", host: "node-1" },
      firstTimestamp: "2030-01-02T03:04:05Z",
      lastTimestamp: "2030-01-02T03:04:05Z",
      count: 1,
      type: "Normal",
    };
    const created = await call(s.base, "POST", CORE, { body: core });
    expect(created.status).toBe(201);
    const viaEvents = await call(s.base, "GET", `${EVENTS}/${name}`);
    expect(viaEvents.body).toMatchObject({
      apiVersion: "events.platform.io/v1",
      regarding: { kind: "Pod", namespace: "default", name: "p1" },
      note: "started the container",
      deprecatedSource: { component: "kubelet", host: "node-1" },
      deprecatedFirstTimestamp: "2030-01-02T03:04:05Z",
      deprecatedCount: 1,
    });
    expect(viaEvents.body).not.toHaveProperty("source");
    // A legacy recorder bumps count and lastTimestamp with a strategic merge patch.
    const patched = await call(s.base, "PATCH", `${CORE}/${name}`, {
      body: { count: 2, lastTimestamp: "2030-01-02T03:05:05Z" },
      contentType: "application/strategic-merge-patch+json",
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ count: 2, lastTimestamp: "2030-01-02T03:05:05Z", source: { component: "kubelet" } });
    expect((await call(s.base, "GET", `${EVENTS}/${name}`)).body).toMatchObject({ deprecatedCount: 2, deprecatedLastTimestamp: "2030-01-02T03:05:05Z" });
    expect((await call(s.base, "DELETE", `${CORE}/${name}`)).status).toBe(200);
    expect((await call(s.base, "GET", `${EVENTS}/${name}`)).status).toBe(404);
  });

  it("refuses a core Event whose namespace does not match its involved object, as upstream's legacy rules", async () => {
    const r = await call(s.base, "POST", CORE, {
      body: { apiVersion: "v1", kind: "Event", metadata: { name: s.unique("bad") }, involvedObject: { kind: "Pod", namespace: "platform-system", name: "p" } },
    });
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([expect.objectContaining({ field: "involvedObject.namespace" })]);
  });

  it("selects by involvedObject.* across namespaces as kubectl describe asks, and by regarding.* in the events group", async () => {
    const a = s.unique("sel");
    const b = s.unique("sel");
    await call(s.base, "POST", EVENTS, { body: newEvent(a, "csr-sel") });
    await call(s.base, "POST", EVENTS, { body: newEvent(b, "csr-other") });
    const selector = encodeURIComponent("involvedObject.name=csr-sel,involvedObject.namespace=,involvedObject.kind=CertificateSigningRequest,involvedObject.uid=uid-csr-sel");
    const core = await call(s.base, "GET", `/api/v1/events?fieldSelector=${selector}`);
    expect(core.status).toBe(200);
    expect(core.body.kind).toBe("EventList");
    expect(core.body.items.map((e: { metadata: { name: string } }) => e.metadata.name)).toEqual([a]);
    const byReason = await call(s.base, "GET", `/api/v1/events?fieldSelector=${encodeURIComponent("reason=CertificateIssued,type=Normal,reportingComponent=platform-ca-controller-manager")}`);
    expect(byReason.body.items.map((e: { metadata: { name: string } }) => e.metadata.name)).toEqual(expect.arrayContaining([a, b]));
    const events = await call(s.base, "GET", `/apis/events.platform.io/v1/events?fieldSelector=${encodeURIComponent("regarding.name=csr-other,regarding.kind=CertificateSigningRequest")}`);
    expect(events.body.items.map((e: { metadata: { name: string } }) => e.metadata.name)).toEqual([b]);
    expect((await call(s.base, "GET", `/api/v1/events?fieldSelector=regarding.name%3Dx`)).status).toBe(400);
  });

  it("watches in the core form what is written through the events group", async () => {
    const list = await call(s.base, "GET", CORE);
    const w = await openWatch(s.base, `${CORE}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
    try {
      const name = s.unique("watched");
      await call(s.base, "POST", EVENTS, { body: newEvent(name, "csr-w") });
      const ev = await w.next();
      expect(ev).toMatchObject({ type: "ADDED", object: { apiVersion: "v1", kind: "Event", metadata: { name }, involvedObject: { name: "csr-w" }, message: "issued" } });
    } finally {
      w.close();
    }
  });

  it("pages a core list with limit and continue over the stored keys", async () => {
    for (let i = 0; i < 3; i++) await call(s.base, "POST", EVENTS, { body: newEvent(s.unique("page"), "csr-p") });
    const all = (await call(s.base, "GET", CORE)).body.items.map((e: { metadata: { name: string } }) => e.metadata.name);
    const names: string[] = [];
    let token = "";
    do {
      const r = await call(s.base, "GET", `${CORE}?limit=2${token ? `&continue=${encodeURIComponent(token)}` : ""}`);
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(2);
      names.push(...r.body.items.map((e: { metadata: { name: string } }) => e.metadata.name));
      token = r.body.metadata.continue ?? "";
    } while (token);
    expect(all.length).toBeGreaterThan(2);
    expect(names).toEqual(all);
  });

  it("prints the Table kubectl get events shows", async () => {
    const name = s.unique("tbl");
    await call(s.base, "POST", EVENTS, { body: newEvent(name, "csr-t") });
    const r = await call(s.base, "GET", `${CORE}/${name}`, { accept: TABLE_ACCEPT });
    expect(r.body.kind).toBe("Table");
    // Upstream's event columns, without the AGE other kinds get.
    expect(r.body.columnDefinitions.map((c: { name: string }) => c.name)).toEqual(["Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"]);
    expect(r.body.rows[0].cells.slice(1, 4)).toEqual(["Normal", "CertificateIssued", "certificatesigningrequest/csr-t"]);
  });
});

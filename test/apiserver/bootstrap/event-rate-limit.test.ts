// EventRateLimit over HTTPS: each limit type refuses with 429 exactly after its burst, per key, through both Event APIs.
import { describe, expect, it } from "vitest";
import { enabledAdmissionPlugins } from "../../../src/config/admission-config.js";
import type { EventRateLimit } from "../../../src/config/event-rate-limit.js";
import { TOKENS, useSecureFixture, type CallOptions, type Reply, type SecureFixture } from "./fixtures.js";

const admin = { token: TOKENS.admin };

/** A server whose only Event limit is `limit` (qps 1 unless given), on the fixture's fake clock. */
function serverWith(limit: Omit<EventRateLimit, "qps" | "cacheSize"> & { qps?: number; cacheSize?: number }) {
  const configs = { EventRateLimit: { limits: [{ qps: 1, cacheSize: 4096, ...limit }] } };
  return useSecureFixture({ admission: { plugins: enabledAdmissionPlugins({ enable: ["EventRateLimit"], file: { source: "test", configs, listed: [] } }), configs } });
}

let serial = 0;

/** Creates an Event in `ns` about `object` from `source`, through the core API or the events API. */
function createEvent(f: SecureFixture, api: "core" | "events", o: { ns?: string; object?: string; source?: string; as?: CallOptions; dryRun?: boolean } = {}): Promise<Reply> {
  const ns = o.ns ?? "default";
  const name = `ev-${++serial}`;
  const object = { kind: "Pod", namespace: ns, name: o.object ?? "p1", uid: `uid-${o.object ?? "p1"}`, apiVersion: "v1" };
  const source = o.source ?? "kubelet";
  const body = api === "core"
    ? { apiVersion: "v1", kind: "Event", metadata: { name }, involvedObject: object, reason: "Started", message: "started", type: "Normal", source: { component: source, host: "node-1" }, firstTimestamp: "2030-01-01T00:00:00Z", lastTimestamp: "2030-01-01T00:00:00Z", count: 1 }
    : { apiVersion: `${f.names.events}/v1`, kind: "Event", metadata: { name }, eventTime: "2030-01-01T00:00:00.000000Z", action: "Start", reason: "Started", note: "started", type: "Normal", regarding: object, reportingController: source, reportingInstance: "node-1" };
  const path = api === "core" ? `/api/v1/namespaces/${ns}/events` : `/apis/${f.names.events}/v1/namespaces/${ns}/events`;
  return f.call("POST", `${path}${o.dryRun ? "?dryRun=All" : ""}`, { ...(o.as ?? admin), body });
}

function expectTooMany(r: Reply, message: string): void {
  expect(r.status, r.text).toBe(429);
  expect(r.body).toMatchObject({ kind: "Status", reason: "TooManyRequests", code: 429, message });
  expect(r.headers?.["retry-after"]).toBe("1");
}

const statuses = (replies: readonly Reply[]) => replies.map((r) => r.status);

async function namespaces(f: SecureFixture, ...names: string[]): Promise<void> {
  for (const name of names) {
    const r = await f.call("POST", "/api/v1/namespaces", { ...admin, body: { apiVersion: "v1", kind: "Namespace", metadata: { name } } });
    expect([201, 409]).toContain(r.status);
  }
}

describe("EventRateLimit Server", () => {
  const fx = serverWith({ type: "Server", burst: 3 });

  it("accepts the burst across both APIs, then refuses; a refill of one token admits one more", async () => {
    const f = fx();
    await namespaces(f, "other", "third", "fourth");
    expect(statuses([await createEvent(f, "core"), await createEvent(f, "events", { ns: "other" }), await createEvent(f, "core", { ns: "third" })])).toEqual([201, 201, 201]);
    expectTooMany(await createEvent(f, "events"), 'limit reached on type Server for key ""');
    expectTooMany(await createEvent(f, "core", { ns: "fourth" }), 'limit reached on type Server for key ""');
    // A dry run stores nothing and spends nothing, even with the bucket empty.
    for (const api of ["core", "events"] as const) expect((await createEvent(f, api, { dryRun: true })).status).toBe(201);
    await f.clock.advance(1000);
    expect((await createEvent(f, "events")).status).toBe(201);
    expect((await createEvent(f, "events")).status).toBe(429);
  });

  it("counts updates of an Event too, and leaves other resources alone", async () => {
    const f = fx();
    await f.clock.advance(1000);
    const created = await createEvent(f, "core");
    expect(created.status).toBe(201);
    const path = `/api/v1/namespaces/default/events/${created.body.metadata.name}`;
    expectTooMany(await f.call("PUT", path, { ...admin, body: { ...created.body, count: 2 } }), 'limit reached on type Server for key ""');
    await f.clock.advance(1000);
    expect((await f.call("PUT", path, { ...admin, body: { ...created.body, count: 2 } })).status).toBe(200);
    expect((await f.call("POST", "/api/v1/namespaces/default/serviceaccounts", { ...admin, body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "not-an-event" } } })).status).toBe(201);
  });
});

describe("EventRateLimit Namespace", () => {
  const fx = serverWith({ type: "Namespace", burst: 2 });

  it("keeps one bucket per namespace", async () => {
    const f = fx();
    await namespaces(f, "team-a", "team-b");
    expect(statuses([await createEvent(f, "core", { ns: "team-a" }), await createEvent(f, "events", { ns: "team-a" })])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "core", { ns: "team-a" }), 'limit reached on type Namespace for key "team-a"');
    expect(statuses([await createEvent(f, "events", { ns: "team-b" }), await createEvent(f, "core", { ns: "team-b" })])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "events", { ns: "team-b" }), 'limit reached on type Namespace for key "team-b"');
  });
});

describe("EventRateLimit User", () => {
  const fx = serverWith({ type: "User", burst: 2 });
  const events = (f: SecureFixture) => [{ verbs: ["create"], apiGroups: ["", f.names.events], resources: ["events"] }];

  it("keeps one bucket per user", async () => {
    const f = fx();
    await f.grant("alice", "alice-events", events(f));
    await f.grant("bob", "bob-events", events(f));
    await namespaces(f, "elsewhere");
    const alice = { as: { token: TOKENS.alice } };
    const bob = { as: { token: TOKENS.bob } };
    expect(statuses([await createEvent(f, "core", alice), await createEvent(f, "events", { ...alice, ns: "elsewhere" })])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "core", alice), 'limit reached on type User for key "alice"');
    expect(statuses([await createEvent(f, "events", bob), await createEvent(f, "core", bob)])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "events", bob), 'limit reached on type User for key "bob"');
  });
});

describe("EventRateLimit SourceAndObject", () => {
  const fx = serverWith({ type: "SourceAndObject", burst: 2, cacheSize: 2 });
  const key = (source: string, object: string) => JSON.stringify(JSON.stringify([source, "node-1", "Pod", "default", object, `uid-${object}`, "v1"]));

  it("keeps one bucket per source and object, the same whichever API the event comes through", async () => {
    const f = fx();
    expect(statuses([await createEvent(f, "core"), await createEvent(f, "events")])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "core"), `limit reached on type SourceAndObject for key ${key("kubelet", "p1")}`);
    expect(statuses([await createEvent(f, "events", { object: "p2" }), await createEvent(f, "core", { object: "p2" })])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "events", { object: "p2" }), `limit reached on type SourceAndObject for key ${key("kubelet", "p2")}`);
  });

  it("forgets the least recently used bucket past cacheSize: that key starts again with a full burst", async () => {
    const f = fx();
    // A third key in a cache of two evicts kubelet's p1 bucket (the least recently used), which was empty.
    expect((await createEvent(f, "core", { source: "scheduler" })).status).toBe(201);
    expect(statuses([await createEvent(f, "core"), await createEvent(f, "events")])).toEqual([201, 201]);
    expectTooMany(await createEvent(f, "core"), `limit reached on type SourceAndObject for key ${key("kubelet", "p1")}`);
  });
});

// Events expire as upstream's do (--event-ttl, an hour by default): deleted that long after their last write, with a
// DELETED watch event, in both API forms; other kinds are kept; 0 keeps Events too.
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import { isPlatformError } from "../../src/errors.js";
import { call, openWatch } from "./http-client.js";
import { FakeClock, newEvent, serverFixture } from "./fixtures.js";

const EVENTS = "/apis/events.platform.io/v1/namespaces/default/events";
const CORE = "/api/v1/namespaces/default/events";
const SECRETS = "/api/v1/namespaces/default/secrets";
const MINUTE = 60_000;

const started: Array<{ stop(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
});

async function server(eventTtlSeconds?: number) {
  const clock = new FakeClock(Date.now());
  const s = await serverFixture({ clock, storage: new MemoryStorage({ clock }), ...(eventTtlSeconds !== undefined && { eventTtlSeconds }) });
  started.push(s);
  return { clock, base: s.address };
}

const coreEvent = (name: string) => ({ apiVersion: "v1", kind: "Event", metadata: { name }, involvedObject: { kind: "Pod", name: "p" }, reason: "Started", count: 1 });

describe("event TTL", () => {
  it("deletes each Event an hour after its last write, as a DELETED watch event, and keeps everything else", async () => {
    const { clock, base } = await server();
    expect((await call(base, "POST", EVENTS, { body: newEvent("issued", "csr-a") })).status).toBe(201);
    expect((await call(base, "POST", CORE, { body: coreEvent("started") })).status).toBe(201);
    expect((await call(base, "POST", SECRETS, { body: { apiVersion: "v1", kind: "Secret", metadata: { name: "kept" } } })).status).toBe(201);
    const watch = await openWatch(base, `${CORE}?watch=true&timeoutSeconds=86400`);
    expect((await watch.next()).type).toBe("ADDED");
    expect((await watch.next()).type).toBe("ADDED");
    await clock.advance(30 * MINUTE);
    // A recorder counting the same event again: the write starts its hour anew.
    const bumped = await call(base, "PATCH", `${CORE}/started`, { body: { count: 2 }, contentType: "application/merge-patch+json" });
    expect(bumped.status).toBe(200);
    expect((await watch.next()).type).toBe("MODIFIED");
    await clock.advance(31 * MINUTE);
    const gone = await watch.next();
    expect([gone.type, gone.object.metadata.name, gone.object.reason]).toEqual(["DELETED", "issued", "CertificateIssued"]);
    expect((await call(base, "GET", `${EVENTS}/issued`)).status).toBe(404);
    expect((await call(base, "GET", `${CORE}/started`)).body.count).toBe(2);
    await clock.advance(30 * MINUTE);
    expect((await watch.next()).object.metadata.name).toBe("started");
    expect((await call(base, "GET", CORE)).body.items).toEqual([]);
    expect((await call(base, "GET", `${SECRETS}/kept`)).status).toBe(200);
    watch.close();
  });

  it("takes another TTL, and with 0 keeps Events until they are deleted", async () => {
    const short = await server(120);
    await call(short.base, "POST", EVENTS, { body: newEvent("brief", "csr-a") });
    await short.clock.advance(2 * MINUTE + 1000);
    expect((await call(short.base, "GET", `${EVENTS}/brief`)).status).toBe(404);
    const never = await server(0);
    await call(never.base, "POST", EVENTS, { body: newEvent("kept", "csr-a") });
    await never.clock.advance(48 * 60 * MINUTE);
    expect((await call(never.base, "GET", `${EVENTS}/kept`)).status).toBe(200);
  });

  it("refuses an eventTtlSeconds that is not a whole number of seconds", async () => {
    for (const bad of [-1, 1.5]) {
      let err: unknown;
      try {
        await serverFixture({ eventTtlSeconds: bad });
      } catch (e) {
        err = e;
      }
      expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
      expect((err as Error).message).toContain("eventTtlSeconds");
    }
  });
});
